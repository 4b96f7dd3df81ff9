//! Values in native byte order: element access, text and JSON formatting, exact comparison
//! (floats bitwise, NaN equal to NaN), and box extraction.

use serde_json::Value;
use vzarr_core::{DataType, half_to_f64};

/// Array values in native byte order, C order.
#[derive(Clone, Debug, PartialEq)]
pub struct RawArray {
    /// Element type.
    pub data_type: DataType,
    /// Shape.
    pub shape: Vec<u64>,
    /// Element bytes in native byte order (byte strings as stored); empty for strings.
    pub bytes: Vec<u8>,
    /// The elements of a [`DataType::String`] array, C order; empty for other types.
    pub strings: Vec<String>,
}

/// One element, decoded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar<'a> {
    /// A boolean.
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer.
    UInt(u64),
    /// A float16 value (widened).
    F16(f32),
    /// A float32 value.
    F32(f32),
    /// A float64 value.
    F64(f64),
    /// A fixed-length byte string, as stored.
    Bytes(&'a [u8]),
    /// A complex64 value (real, imaginary).
    C64(f32, f32),
    /// A complex128 value (real, imaginary).
    C128(f64, f64),
    /// A variable-length string.
    Str(&'a str),
    /// An element of a `struct` type: its bytes in native byte order per field.
    Raw(&'a [u8]),
}

fn arr<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    a
}

/// Decodes one element of `dt` from native bytes (`b` holds at least `dt.size()` bytes; for
/// [`DataType::String`], the element's UTF-8 text, which is empty if it is not UTF-8).
pub fn scalar<'a>(dt: &DataType, b: &'a [u8]) -> Scalar<'a> {
    match dt {
        DataType::String => Scalar::Str(std::str::from_utf8(b).unwrap_or_default()),
        DataType::Bool => Scalar::Bool(b[0] != 0),
        DataType::Int8 => Scalar::Int(i64::from(b[0] as i8)),
        DataType::Int16 => Scalar::Int(i64::from(i16::from_ne_bytes(arr(b)))),
        DataType::Int32 => Scalar::Int(i64::from(i32::from_ne_bytes(arr(b)))),
        DataType::Int64 => Scalar::Int(i64::from_ne_bytes(arr(b))),
        DataType::UInt8 => Scalar::UInt(u64::from(b[0])),
        DataType::UInt16 => Scalar::UInt(u64::from(u16::from_ne_bytes(arr(b)))),
        DataType::UInt32 => Scalar::UInt(u64::from(u32::from_ne_bytes(arr(b)))),
        DataType::UInt64 => Scalar::UInt(u64::from_ne_bytes(arr(b))),
        DataType::Float16 => Scalar::F16(half_to_f64(u16::from_ne_bytes(arr(b))) as f32),
        DataType::Float32 => Scalar::F32(f32::from_ne_bytes(arr(b))),
        DataType::Float64 => Scalar::F64(f64::from_ne_bytes(arr(b))),
        DataType::FixedBytes(n) => Scalar::Bytes(&b[..*n]),
        DataType::Struct(_) | DataType::FixedUtf32(_) => Scalar::Raw(&b[..dt.size()]),
        DataType::Complex64 => {
            Scalar::C64(f32::from_ne_bytes(arr(b)), f32::from_ne_bytes(arr(&b[4..])))
        }
        DataType::Complex128 => {
            Scalar::C128(f64::from_ne_bytes(arr(b)), f64::from_ne_bytes(arr(&b[8..])))
        }
    }
}

fn float_text(v: f64, shortest: impl Fn() -> String) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf".into() } else { "-inf".into() }
    } else {
        shortest()
    }
}

fn float_json(v: f64, n: Option<serde_json::Number>) -> Value {
    if v.is_nan() {
        Value::from("NaN")
    } else if v.is_infinite() {
        Value::from(if v > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        n.map_or(Value::Null, Value::Number)
    }
}

fn strip_nuls(b: &[u8]) -> &[u8] {
    let end = b.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    &b[..end]
}

impl Scalar<'_> {
    /// Text form: integers in decimal, floats in their shortest round-trip form (`nan`,
    /// `inf`), booleans `true`/`false`, byte strings quoted with trailing NULs removed.
    pub fn to_text(&self) -> String {
        match *self {
            Scalar::Bool(v) => v.to_string(),
            Scalar::Int(v) => v.to_string(),
            Scalar::UInt(v) => v.to_string(),
            Scalar::F16(v) | Scalar::F32(v) => float_text(f64::from(v), || v.to_string()),
            Scalar::F64(v) => float_text(v, || v.to_string()),
            Scalar::Bytes(b) => {
                let b = strip_nuls(b);
                match std::str::from_utf8(b) {
                    Ok(s) => serde_json::to_string(s).unwrap_or_default(),
                    Err(_) => format!("\"{}\"", b.escape_ascii()),
                }
            }
            Scalar::Raw(b) => format!(
                "0x{}",
                b.iter().map(|x| format!("{x:02x}")).collect::<String>()
            ),
            Scalar::C64(re, im) => format!(
                "({}{}{}j)",
                float_text(f64::from(re), || re.to_string()),
                if im.is_sign_negative() && !im.is_nan() {
                    ""
                } else {
                    "+"
                },
                float_text(f64::from(im), || im.to_string())
            ),
            Scalar::C128(re, im) => format!(
                "({}{}{}j)",
                float_text(re, || re.to_string()),
                if im.is_sign_negative() && !im.is_nan() {
                    ""
                } else {
                    "+"
                },
                float_text(im, || im.to_string())
            ),
            Scalar::Str(s) => serde_json::to_string(s).unwrap_or_default(),
        }
    }

    /// JSON form: numbers, `"NaN"`/`"Infinity"`/`"-Infinity"` for non-finite floats, strings
    /// (lossy UTF-8, trailing NULs removed) for byte strings.
    pub fn to_json(&self) -> Value {
        match *self {
            Scalar::Bool(v) => Value::from(v),
            Scalar::Int(v) => Value::from(v),
            Scalar::UInt(v) => Value::from(v),
            Scalar::F16(v) | Scalar::F32(v) => {
                // The shortest f32 text, parsed back as f64, keeps the JSON short.
                let n = v
                    .to_string()
                    .parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64);
                float_json(f64::from(v), n)
            }
            Scalar::F64(v) => float_json(v, serde_json::Number::from_f64(v)),
            Scalar::Bytes(b) => Value::from(String::from_utf8_lossy(strip_nuls(b)).into_owned()),
            Scalar::Raw(b) => Value::from(format!(
                "0x{}",
                b.iter().map(|x| format!("{x:02x}")).collect::<String>()
            )),
            Scalar::C64(re, im) => {
                Value::Array(vec![Scalar::F32(re).to_json(), Scalar::F32(im).to_json()])
            }
            Scalar::C128(re, im) => {
                Value::Array(vec![Scalar::F64(re).to_json(), Scalar::F64(im).to_json()])
            }
            Scalar::Str(s) => Value::from(s),
        }
    }
}

impl RawArray {
    /// Number of elements.
    pub fn len(&self) -> usize {
        if self.data_type.is_string() {
            return self.strings.len();
        }
        self.bytes.len() / self.data_type.size().max(1)
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element at C-order position `i`.
    pub fn get(&self, i: usize) -> Option<Scalar<'_>> {
        if self.data_type.is_string() {
            return self.strings.get(i).map(|s| Scalar::Str(s));
        }
        let n = self.data_type.size();
        let b = self.bytes.get(i.checked_mul(n)?..(i + 1).checked_mul(n)?)?;
        Some(scalar(&self.data_type, b))
    }

    /// The values as text: one value for 0-d, one line for 1-d, one row per line for 2-d, and
    /// for more dimensions a `[i, j, :, :]` header before each 2-d block.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let nd = self.shape.len();
        let row = |out: &mut String, start: usize, len: usize| {
            let items: Vec<String> = (start..start + len)
                .filter_map(|i| self.get(i).map(|s| s.to_text()))
                .collect();
            out.push_str(&items.join(" "));
            out.push('\n');
        };
        match nd {
            0 => row(&mut out, 0, 1),
            1 => row(&mut out, 0, self.shape[0] as usize),
            _ => {
                let cols = self.shape[nd - 1] as usize;
                let rows = self.shape[nd - 2] as usize;
                let outer: Vec<u64> = self.shape[..nd - 2].to_vec();
                let nblocks: u64 = outer.iter().product();
                for b in 0..nblocks {
                    if nd > 2 {
                        let idx = unravel(b, &outer);
                        let mut head: Vec<String> = idx.iter().map(u64::to_string).collect();
                        head.push(":".into());
                        head.push(":".into());
                        if b > 0 {
                            out.push('\n');
                        }
                        out.push_str(&format!("[{}]\n", head.join(", ")));
                    }
                    for r in 0..rows {
                        row(&mut out, (b as usize * rows + r) * cols, cols);
                    }
                }
            }
        }
        out
    }

    /// The values as nested JSON arrays (a scalar for 0-d).
    pub fn to_json(&self) -> Value {
        fn nest(a: &RawArray, axis: usize, base: usize) -> Value {
            if axis == a.shape.len() {
                return a.get(base).map_or(Value::Null, |s| s.to_json());
            }
            let n = a.shape[axis] as usize;
            let stride: usize = a.shape[axis + 1..].iter().map(|&d| d as usize).product();
            Value::Array(
                (0..n)
                    .map(|i| nest(a, axis + 1, base + i * stride))
                    .collect(),
            )
        }
        nest(self, 0, 0)
    }
}

/// The multi-index of C-order position `lin` in `shape`.
pub fn unravel(mut lin: u64, shape: &[u64]) -> Vec<u64> {
    let mut out = vec![0; shape.len()];
    for (k, &d) in shape.iter().enumerate().rev() {
        let d = d.max(1);
        out[k] = lin % d;
        lin /= d;
    }
    out
}

/// The C-order positions, in an array of `shape`, of the elements of the box
/// `start`+`count`, in C order over the box.
pub fn box_positions(shape: &[u64], start: &[u64], count: &[u64]) -> Vec<usize> {
    let n: u64 = count.iter().product();
    (0..n)
        .map(|k| {
            unravel(k, count)
                .iter()
                .zip(start)
                .zip(shape)
                .fold(0usize, |lin, ((i, s), d)| {
                    lin * *d as usize + (i + s) as usize
                })
        })
        .collect()
}

/// Copies the box `start`+`count` out of C-order `bytes` of `shape` (elements of `esize`
/// bytes).
pub fn extract_box(
    bytes: &[u8],
    shape: &[u64],
    esize: usize,
    start: &[u64],
    count: &[u64],
) -> Vec<u8> {
    let n: usize = count.iter().map(|&c| c as usize).product();
    let mut out = Vec::with_capacity(n * esize);
    if n == 0 {
        return out;
    }
    let nd = shape.len();
    if nd == 0 {
        out.extend_from_slice(&bytes[..esize]);
        return out;
    }
    // Innermost contiguous run.
    let run = count[nd - 1] as usize * esize;
    let outer: Vec<u64> = count[..nd - 1].to_vec();
    let nrows: u64 = outer.iter().product();
    for r in 0..nrows {
        let idx = unravel(r, &outer);
        let mut lin: usize = 0;
        for k in 0..nd - 1 {
            lin = lin * shape[k] as usize + (start[k] + idx[k]) as usize;
        }
        lin = lin * shape[nd - 1] as usize + start[nd - 1] as usize;
        let off = lin * esize;
        out.extend_from_slice(&bytes[off..off + run]);
    }
    out
}

/// How two value buffers differ.
#[derive(Clone, Debug, PartialEq)]
pub struct Difference {
    /// Number of differing elements.
    pub count: u64,
    /// C-order position of the first difference.
    pub first: usize,
    /// The first differing value through the manifest, as text.
    pub ours: String,
    /// The first differing value in the source, as text.
    pub theirs: String,
}

impl Difference {
    /// `ours` values against `theirs` values: lists of different lengths differ from the
    /// first position on.
    fn lengths(ours: usize, theirs: usize) -> Difference {
        Difference {
            count: ours.max(theirs) as u64,
            first: 0,
            ours: format!("{ours} values"),
            theirs: format!("{theirs} values"),
        }
    }

    /// Compares the pairs of values `pair(i)` for `i` in `0..n` with `equal`, counting those
    /// that differ; `texts` gives the first differing pair as text, ours then theirs. `None`
    /// when all are equal.
    fn tally<A, B>(
        n: usize,
        pair: impl Fn(usize) -> (A, B),
        equal: impl Fn(&A, &B) -> bool,
        texts: impl FnOnce(A, B) -> (String, String),
    ) -> Option<Difference> {
        let mut at = (0..n)
            .map(|i| (i, pair(i)))
            .filter(|(_, (a, b))| !equal(a, b));
        let (first, (a, b)) = at.next()?;
        let count = 1 + at.count() as u64;
        let (ours, theirs) = texts(a, b);
        Some(Difference {
            count,
            first,
            ours,
            theirs,
        })
    }
}

fn as_i128(s: Scalar<'_>) -> Option<i128> {
    match s {
        Scalar::Bool(v) => Some(i128::from(v)),
        Scalar::Int(v) => Some(i128::from(v)),
        Scalar::UInt(v) => Some(i128::from(v)),
        _ => None,
    }
}

fn as_f64(s: Scalar<'_>) -> Option<f64> {
    match s {
        Scalar::F16(v) | Scalar::F32(v) => Some(f64::from(v)),
        Scalar::F64(v) => Some(v),
        Scalar::Bytes(_) | Scalar::C64(..) | Scalar::C128(..) | Scalar::Str(_) | Scalar::Raw(_) => {
            None
        }
        other => as_i128(other).map(|i| i as f64),
    }
}

/// The values as f64 (integers converted, byte strings refused).
pub fn to_f64s(dt: DataType, bytes: &[u8]) -> Option<Vec<f64>> {
    let n = dt.size().max(1);
    bytes
        .chunks_exact(n)
        .map(|b| as_f64(scalar(&dt, b)))
        .collect()
}

/// Compares every element: same data type bitwise (floats: NaN equals NaN, any payload);
/// different numeric types by value (integers exactly, floats as f64); structs field by
/// field; a byte string against a number never matches. `None` when all are equal.
pub fn compare(
    ours_dt: DataType,
    ours: &[u8],
    theirs_dt: DataType,
    theirs: &[u8],
) -> Option<Difference> {
    let (ea, eb) = (ours_dt.size().max(1), theirs_dt.size().max(1));
    let n = ours.len() / ea;
    if theirs.len() / eb != n {
        return Some(Difference::lengths(n, theirs.len() / eb));
    }
    if ours_dt == theirs_dt && ours == theirs {
        return None;
    }
    Difference::tally(
        n,
        |i| (&ours[i * ea..(i + 1) * ea], &theirs[i * eb..(i + 1) * eb]),
        |a, b| element_equal(&ours_dt, a, &theirs_dt, b),
        |a, b| {
            (
                scalar(&ours_dt, a).to_text(),
                scalar(&theirs_dt, b).to_text(),
            )
        },
    )
}

/// Whether element `a` of type `ta` and element `b` of type `tb` hold the same value: of one
/// type bitwise (floats: NaN equals NaN, any payload); of different numeric types by value
/// (integers exactly, a boolean as 0 or 1, floats as f64); byte strings up to trailing NULs;
/// structs field by field in order, whatever their types are called (an HDF5 enum bool
/// member read as `int8` by one reader and `bool` by the other holds the same values).
fn element_equal(ta: &DataType, a: &[u8], tb: &DataType, b: &[u8]) -> bool {
    if let (DataType::Struct(fa), DataType::Struct(fb)) = (ta, tb) {
        if fa.len() != fb.len() {
            return false;
        }
        let (mut ia, mut ib) = (0, 0);
        for (x, y) in fa.iter().zip(fb.iter()) {
            let (na, nb) = (x.data_type.size(), y.data_type.size());
            let (Some(fa), Some(fb)) = (a.get(ia..ia + na), b.get(ib..ib + nb)) else {
                return false;
            };
            if !element_equal(&x.data_type, fa, &y.data_type, fb) {
                return false;
            }
            ia += na;
            ib += nb;
        }
        return true;
    }
    let (sa, sb) = (scalar(ta, a), scalar(tb, b));
    if ta == tb {
        a == b
            || (ta.is_float()
                && as_f64(sa).is_some_and(f64::is_nan)
                && as_f64(sb).is_some_and(f64::is_nan))
            || complex_equal(sa, sb)
    } else if let (Some(x), Some(y)) = (as_i128(sa), as_i128(sb)) {
        x == y
    } else if let (Some(x), Some(y)) = (as_f64(sa), as_f64(sb)) {
        x == y || (x.is_nan() && y.is_nan())
    } else {
        matches!((sa, sb), (Scalar::Bytes(x), Scalar::Bytes(y)) if strip_nuls(x) == strip_nuls(y))
    }
}

/// Complex values equal part by part (NaN equal to NaN).
fn complex_equal(a: Scalar<'_>, b: Scalar<'_>) -> bool {
    let same = |x: f64, y: f64| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan());
    match (a, b) {
        (Scalar::C64(a, b), Scalar::C64(c, d)) => {
            same(f64::from(a), f64::from(c)) && same(f64::from(b), f64::from(d))
        }
        (Scalar::C128(a, b), Scalar::C128(c, d)) => same(a, c) && same(b, d),
        _ => false,
    }
}

/// Compares two lists of strings element by element; `None` when all are equal.
pub fn compare_strings<A: AsRef<str>, B: AsRef<str>>(
    ours: &[A],
    theirs: &[B],
) -> Option<Difference> {
    if ours.len() != theirs.len() {
        return Some(Difference::lengths(ours.len(), theirs.len()));
    }
    Difference::tally(
        ours.len(),
        |i| (ours[i].as_ref(), theirs[i].as_ref()),
        |a, b| a == b,
        |a, b| (Scalar::Str(a).to_text(), Scalar::Str(b).to_text()),
    )
}

/// Swaps each `esize`-byte element of `bytes` in place (big-endian to native on little-endian
/// machines and back).
pub fn swap_elements(bytes: &mut [u8], esize: usize) {
    if esize > 1 {
        for e in bytes.chunks_exact_mut(esize) {
            e.reverse();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    #[test]
    fn text_and_json() {
        let a = RawArray {
            data_type: DataType::Float32,
            shape: vec![2, 3],
            bytes: f32s(&[1.0, 0.1, f32::NAN, -2.5, f32::INFINITY, 1e20]),
            strings: vec![],
        };
        assert_eq!(a.to_text(), "1 0.1 nan\n-2.5 inf 100000000000000000000\n");
        assert_eq!(
            a.to_json(),
            serde_json::json!([[1.0, 0.1, "NaN"], [-2.5, "Infinity", 1e20]])
        );
        let s = RawArray {
            data_type: DataType::FixedBytes(3),
            shape: vec![2],
            bytes: b"ab\0\xff\0\0".to_vec(),
            strings: vec![],
        };
        assert_eq!(s.to_text(), "\"ab\" \"\\xff\"\n");
        let z = RawArray {
            data_type: DataType::Int16,
            shape: vec![],
            bytes: 7i16.to_ne_bytes().to_vec(),
            strings: vec![],
        };
        assert_eq!(z.to_text(), "7\n");
        assert_eq!(z.to_json(), serde_json::json!(7));
        let c = RawArray {
            data_type: DataType::UInt8,
            shape: vec![2, 1, 2],
            bytes: vec![1, 2, 3, 4],
            strings: vec![],
        };
        assert_eq!(c.to_text(), "[0, :, :]\n1 2\n\n[1, :, :]\n3 4\n");
        let t = RawArray {
            data_type: DataType::String,
            shape: vec![2],
            bytes: vec![],
            strings: vec!["a b".into(), "wörld\"".into()],
        };
        assert_eq!(t.len(), 2);
        assert_eq!(t.to_text(), "\"a b\" \"wörld\\\"\"\n");
        assert_eq!(t.to_json(), serde_json::json!(["a b", "wörld\""]));
    }

    #[test]
    fn comparison_rules() {
        let nan_a = f32::from_bits(0x7fc0_0001);
        let nan_b = f32::from_bits(0x7fc0_0002);
        assert_eq!(
            compare(
                DataType::Float32,
                &f32s(&[nan_a, 1.0]),
                DataType::Float32,
                &f32s(&[nan_b, 1.0])
            ),
            None
        );
        let d = compare(
            DataType::Float32,
            &f32s(&[0.0, 1.0, 2.0]),
            DataType::Float32,
            &f32s(&[-0.0, 1.0, 3.0]),
        )
        .unwrap();
        assert_eq!(
            (d.count, d.first, d.ours.as_str(), d.theirs.as_str()),
            (2, 0, "0", "-0")
        );
        // Different types compare by value.
        let ints: Vec<u8> = [1i32, 2, 300]
            .iter()
            .flat_map(|x| x.to_ne_bytes())
            .collect();
        let dbl: Vec<u8> = [1f64, 2.0, 300.0]
            .iter()
            .flat_map(|x| x.to_ne_bytes())
            .collect();
        assert_eq!(
            compare(DataType::Float64, &dbl, DataType::Int32, &ints),
            None
        );
        let u: Vec<u8> = [1u8, 0].to_vec();
        assert_eq!(compare(DataType::Bool, &u, DataType::Int8, &u), None);
        assert!(compare(DataType::Int16, &[0, 0x80], DataType::UInt16, &[0, 0x80]).is_some());
    }

    #[test]
    fn structs_compare_by_value_not_by_type_names() {
        use vzarr_core::StructField;
        let field = |name: &str, data_type| StructField {
            name: name.into(),
            data_type,
        };
        // h5py's table row: a 13-byte string, a float32 and an enum bool, which one reader
        // calls bool and the other int8.
        let ours = DataType::Struct(
            vec![
                field("gene", DataType::FixedBytes(13)),
                field("mean", DataType::Float32),
                field("highly_variable", DataType::Bool),
            ]
            .into(),
        );
        let theirs = DataType::Struct(
            vec![
                field("gene", DataType::FixedBytes(13)),
                field("mean", DataType::Float32),
                field("highly_variable", DataType::Int8),
            ]
            .into(),
        );
        let row = |name: &[u8], mean: f32, flag: u8| {
            let mut b = name.to_vec();
            b.resize(13, 0);
            b.extend_from_slice(&mean.to_ne_bytes());
            b.push(flag);
            b
        };
        let a: Vec<u8> = [row(b"ENSG01", 1.5, 1), row(b"ENSG02", f32::NAN, 0)].concat();
        assert_eq!(compare(ours.clone(), &a, theirs.clone(), &a), None);
        // NaN payloads of one type still equal inside a struct.
        let mut nan = a.clone();
        nan[18 + 13..18 + 13 + 4].copy_from_slice(&f32::from_bits(0x7fc0_0001).to_ne_bytes());
        assert_eq!(compare(ours.clone(), &a, ours.clone(), &nan), None);
        // A changed member is a difference, in either direction.
        let b: Vec<u8> = [row(b"ENSG01", 1.5, 0), row(b"ENSG02", f32::NAN, 0)].concat();
        let d = compare(ours.clone(), &a, theirs.clone(), &b).unwrap();
        assert_eq!((d.count, d.first), (1, 0));
        let c: Vec<u8> = [row(b"ENSG01", 1.5, 1), row(b"ENSG03", f32::NAN, 0)].concat();
        assert_eq!(compare(ours.clone(), &a, theirs, &c).unwrap().first, 1);
        // Structs of other members never match.
        let other = DataType::Struct(vec![field("x", DataType::Float64)].into());
        assert!(compare(ours, &a[..18], other, &a[..8]).is_some());
    }

    #[test]
    fn boxes() {
        // 3x4 array of u8 0..12; box rows 1..3, cols 1..3.
        let b: Vec<u8> = (0..12).collect();
        assert_eq!(
            extract_box(&b, &[3, 4], 1, &[1, 1], &[2, 2]),
            vec![5, 6, 9, 10]
        );
        assert_eq!(
            extract_box(&b, &[3, 4], 1, &[0, 0], &[0, 2]),
            Vec::<u8>::new()
        );
        assert_eq!(extract_box(&[9], &[], 1, &[], &[]), vec![9]);
        assert_eq!(box_positions(&[3, 4], &[1, 1], &[2, 2]), vec![5, 6, 9, 10]);
        assert_eq!(box_positions(&[], &[], &[]), vec![0]);
        assert!(box_positions(&[3, 4], &[0, 0], &[0, 2]).is_empty());
        assert_eq!(compare_strings(&["a", "b"], &["a", "b"]), None);
        let d = compare_strings(&["a", "b", "c"], &["a", "x", "y"]).unwrap();
        assert_eq!(
            (d.count, d.first, d.ours.as_str(), d.theirs.as_str()),
            (2, 1, "\"b\"", "\"x\"")
        );
        assert!(compare_strings(&["a"], &["a", "b"]).is_some());
        assert_eq!(unravel(5, &[2, 3]), vec![1, 2]);
    }
}
