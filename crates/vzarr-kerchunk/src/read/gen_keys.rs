//! Generated keys (`gen`) of kerchunk version 1 references (kerchunk specification,
//! <https://fsspec.github.io/kerchunk/spec.html>, "Version 1"): each entry names `key`, `url`
//! and optionally `offset` and `length` as templates, and `dimensions`, each a list of values
//! or a range `{"start", "stop", "step"}`; one reference is generated per combination of the
//! dimensions' values, C order (the last dimension fastest), as fsspec expands them.
//!
//! fsspec renders the templates with Jinja2. Here `{{ ... }}` holds what references use in
//! practice: a dimension or template name, integers, `+ - * // %` and parentheses (`+` also
//! joins text); anything else (filters, calls, attribute access) is refused with the entry
//! named, never evaluated. Integers are 128-bit; `//` and `%` floor as Python's do; every
//! operation is checked, so an overflow (`(-2**127) // -1`, say) is the entry's error, never a
//! panic or a wrapped value.
//!
//! What an entry expands to is counted (the product of its dimensions' lengths, checked)
//! before anything is generated, and refused beyond the reader's limits: a few bytes of
//! `gen` can name any number of references.

use std::collections::BTreeMap;

use serde_json::Value;

/// A value of a template expression.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Int(i128),
    Text(String),
}

impl Val {
    fn render(&self) -> String {
        match self {
            Val::Int(i) => i.to_string(),
            Val::Text(s) => s.clone(),
        }
    }
}

/// A dimension: its values.
enum Dim {
    List(Vec<Val>),
    Range { start: i128, step: i128, len: u64 },
}

impl Dim {
    fn len(&self) -> u64 {
        match self {
            Dim::List(v) => v.len() as u64,
            Dim::Range { len, .. } => *len,
        }
    }

    /// The `i`-th value (`i` below [`Dim::len`]).
    fn get(&self, i: u64) -> Result<Val, String> {
        match self {
            Dim::List(v) => usize::try_from(i)
                .ok()
                .and_then(|i| v.get(i))
                .cloned()
                .ok_or_else(|| format!("value {i} of a list of {}", v.len())),
            Dim::Range { start, step, .. } => step
                .checked_mul(i128::from(i))
                .and_then(|o| start.checked_add(o))
                .map(Val::Int)
                .ok_or_else(|| OVERFLOW.to_string()),
        }
    }
}

fn parse_dim(name: &str, v: &Value) -> Result<Dim, String> {
    match v {
        Value::Array(items) => items
            .iter()
            .map(|x| match x {
                Value::Number(n) => n
                    .as_i64()
                    .map(|i| Val::Int(i128::from(i)))
                    .ok_or_else(|| format!("dimension {name}: value {n} is not an integer")),
                Value::String(s) => Ok(Val::Text(s.clone())),
                other => Err(format!(
                    "dimension {name}: value {other} is neither an integer nor text"
                )),
            })
            .collect::<Result<_, _>>()
            .map(Dim::List),
        Value::Object(m) => {
            let int = |k: &str, default: Option<i64>| -> Result<i128, String> {
                match m.get(k) {
                    Some(v) => v
                        .as_i64()
                        .map(i128::from)
                        .ok_or_else(|| format!("dimension {name}: {k} {v} is not an integer")),
                    None => default
                        .map(i128::from)
                        .ok_or_else(|| format!("dimension {name}: no {k}")),
                }
            };
            let (start, stop, step) = (
                int("start", Some(0))?,
                int("stop", None)?,
                int("step", Some(1))?,
            );
            if step == 0 {
                return Err(format!("dimension {name}: step 0"));
            }
            // From i64 values: no i128 operation here can overflow.
            let len = if (step > 0 && stop > start) || (step < 0 && stop < start) {
                ((stop - start).abs() + step.abs() - 1) / step.abs()
            } else {
                0
            };
            Ok(Dim::Range {
                start,
                step,
                len: u64::try_from(len).map_err(|_| format!("dimension {name}: too long"))?,
            })
        }
        other => Err(format!(
            "dimension {name}: {other} is neither a list nor a range"
        )),
    }
}

/// Why an arithmetic operation failed.
const OVERFLOW: &str = "integer overflow (values are 128-bit)";

/// Python's (and Jinja2's) floor division, checked: `None` on division by zero or overflow.
fn floor_div(a: i128, b: i128) -> Option<i128> {
    let q = a.checked_div(b)?;
    // Truncated towards zero; one less when the exact quotient is negative and not whole.
    if a.checked_rem(b)? != 0 && ((a < 0) != (b < 0)) {
        q.checked_sub(1)
    } else {
        Some(q)
    }
}

/// Python's (and Jinja2's) modulo (the sign of the divisor), checked: `None` on division by
/// zero. (`i128::MIN % -1` is 0, though Rust's `%` overflows computing it.)
fn floor_mod(a: i128, b: i128) -> Option<i128> {
    if b == -1 {
        return Some(0);
    }
    let r = a.checked_rem(b)?;
    if r != 0 && ((r < 0) != (b < 0)) {
        r.checked_add(b)
    } else {
        Some(r)
    }
}

/// A tiny expression parser over the tokens of one `{{ ... }}`.
struct Expr<'a> {
    s: &'a [u8],
    at: usize,
    vars: &'a BTreeMap<String, Val>,
}

impl Expr<'_> {
    fn ws(&mut self) {
        while self.at < self.s.len() && self.s[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn eat(&mut self, tok: &str) -> bool {
        self.ws();
        if self.s[self.at..].starts_with(tok.as_bytes()) {
            self.at += tok.len();
            true
        } else {
            false
        }
    }

    fn expr(&mut self, depth: u32) -> Result<Val, String> {
        let mut v = self.term(depth)?;
        loop {
            if self.eat("+") {
                let r = self.term(depth)?;
                v = match (v, r) {
                    (Val::Int(a), Val::Int(b)) => Val::Int(a.checked_add(b).ok_or(OVERFLOW)?),
                    (Val::Text(a), Val::Text(b)) => Val::Text(a + &b),
                    _ => return Err("+ of an integer and text".into()),
                };
            } else if self.eat("-") {
                let r = self.int_term(depth)?;
                v = Val::Int(int(&v)?.checked_sub(r).ok_or(OVERFLOW)?);
            } else {
                return Ok(v);
            }
        }
    }

    fn int_term(&mut self, depth: u32) -> Result<i128, String> {
        let v = self.term(depth)?;
        int(&v)
    }

    fn term(&mut self, depth: u32) -> Result<Val, String> {
        let mut v = self.factor(depth)?;
        loop {
            let op = if self.eat("//") {
                "//"
            } else if self.eat("*") {
                "*"
            } else if self.eat("%") {
                "%"
            } else {
                return Ok(v);
            };
            let (a, b) = (int(&v)?, int(&self.factor(depth)?)?);
            v = Val::Int(match op {
                "*" => a.checked_mul(b).ok_or(OVERFLOW)?,
                _ if b == 0 => return Err("division by zero".into()),
                "//" => floor_div(a, b).ok_or(OVERFLOW)?,
                _ => floor_mod(a, b).ok_or(OVERFLOW)?,
            });
        }
    }

    fn factor(&mut self, depth: u32) -> Result<Val, String> {
        if depth > 32 {
            return Err("expression nested too deeply".into());
        }
        self.ws();
        if self.eat("(") {
            let v = self.expr(depth + 1)?;
            if !self.eat(")") {
                return Err("missing )".into());
            }
            return Ok(v);
        }
        if self.eat("-") {
            let v = int(&self.factor(depth + 1)?)?;
            return Ok(Val::Int(v.checked_neg().ok_or(OVERFLOW)?));
        }
        let start = self.at;
        while self.at < self.s.len()
            && (self.s[self.at].is_ascii_alphanumeric() || self.s[self.at] == b'_')
        {
            self.at += 1;
        }
        let tok = std::str::from_utf8(&self.s[start..self.at]).map_err(|e| e.to_string())?;
        if tok.is_empty() {
            return Err("expected a name, a number or (".into());
        }
        if tok.bytes().all(|b| b.is_ascii_digit()) {
            return tok
                .parse()
                .map(Val::Int)
                .map_err(|_| "number too large".into());
        }
        self.vars
            .get(tok)
            .cloned()
            .ok_or_else(|| format!("undefined name {tok:?}"))
    }
}

fn int(v: &Val) -> Result<i128, String> {
    match v {
        Val::Int(i) => Ok(*i),
        Val::Text(t) => Err(format!("arithmetic on the text {t:?}")),
    }
}

/// Renders a template: every `{{ expr }}` replaced by its value.
fn render(template: &str, vars: &BTreeMap<String, Val>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let j = after
            .find("}}")
            .ok_or_else(|| format!("unclosed {{{{ in {template:?}"))?;
        let mut e = Expr {
            s: &after.as_bytes()[..j],
            at: 0,
            vars,
        };
        let v = e.expr(0).map_err(|why| format!("{template:?}: {why}"))?;
        e.ws();
        if e.at != e.s.len() {
            return Err(format!(
                "{template:?}: unsupported template expression {:?} (names, integers, + - * // % and parentheses only)",
                &after[..j]
            ));
        }
        out.push_str(&v.render());
        rest = &after[j + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Expands the `gen` entries into `(key, reference)` pairs handed to `f` one at a time
/// (`[url, offset, length]`, or `[url]` without offset and length). `templates` are names too.
/// Each entry's count is checked against `limits` before any of its references is made: at
/// most `max_generated` references from every entry together, and at most `max_references`
/// with the `before` references the references already hold. Errors name the entry.
pub(super) fn expand(
    gen_: &Value,
    templates: &BTreeMap<String, String>,
    limits: &super::ParseLimits,
    before: u64,
    f: &mut dyn FnMut(String, Value) -> Result<(), super::ParseError>,
    bad: &dyn Fn(String) -> super::ParseError,
) -> Result<(), super::ParseError> {
    let Value::Array(entries) = gen_ else {
        return Err(bad("\"gen\" is not a list".into()));
    };
    let mut total: u64 = 0;
    for (n, entry) in entries.iter().enumerate() {
        let e = |why: String| bad(format!("\"gen\" entry {n}: {why}"));
        let field = |k: &str| entry.get(k).and_then(Value::as_str);
        let (Some(key), Some(url)) = (field("key"), field("url")) else {
            return Err(e("needs \"key\" and \"url\" templates".into()));
        };
        let range = match (entry.get("offset"), entry.get("length")) {
            (Some(o), Some(l)) => Some((as_template(o), as_template(l))),
            (None, None) => None,
            _ => return Err(e("\"offset\" without \"length\", or the reverse".into())),
        };
        let Some(Value::Object(dims)) = entry.get("dimensions") else {
            return Err(e("no \"dimensions\" object".into()));
        };
        let dims: Vec<(String, Dim)> = dims
            .iter()
            .map(|(k, v)| parse_dim(k, v).map(|d| (k.clone(), d)))
            .collect::<Result<_, _>>()
            .map_err(e)?;
        let count = dims
            .iter()
            .try_fold(1u64, |a, (_, d)| a.checked_mul(d.len()));
        let shown =
            |n: Option<u64>| n.map_or_else(|| "2^64 or more".to_string(), |n| n.to_string());
        let generated = count.and_then(|c| total.checked_add(c));
        let max = limits.max_generated;
        let (Some(count), Some(generated)) = (count, generated.filter(|&g| g <= max)) else {
            let with = if total > 0 {
                format!(" ({} with the entries before it)", shown(generated))
            } else {
                String::new()
            };
            return Err(e(format!(
                "expands to {} references{with}, more than the {max} generated keys may expand to (limit max_generated, default {})",
                shown(count),
                super::MAX_GENERATED
            )));
        };
        let max = limits.max_references;
        if generated.checked_add(before).is_none_or(|n| n > max) {
            return Err(e(format!(
                "expands to {count} references, which with the {} before make more than the {max} chunk entries references may hold (limit max_references, default {})",
                before.saturating_add(total),
                vzarr_core::MAX_REFERENCES
            )));
        }
        total = generated;
        let mut vars: BTreeMap<String, Val> = templates
            .iter()
            .map(|(k, v)| (k.clone(), Val::Text(v.clone())))
            .collect();
        for i in 0..count {
            let mut rest = i;
            for (name, d) in dims.iter().rev() {
                let len = d.len();
                vars.insert(name.clone(), d.get(rest % len).map_err(e)?);
                rest /= len;
            }
            let k = render(key, &vars).map_err(e)?;
            let u = Value::String(render(url, &vars).map_err(e)?);
            let value = match &range {
                Some((o, l)) => {
                    let num = |t: &str, what: &str| -> Result<Value, super::ParseError> {
                        let s = render(t, &vars).map_err(e)?;
                        s.trim()
                            .parse::<u64>()
                            .map(Value::from)
                            .map_err(|_| e(format!("{what} {s:?} is not a non-negative integer")))
                    };
                    Value::Array(vec![u, num(o, "offset")?, num(l, "length")?])
                }
                None => Value::Array(vec![u]),
            };
            f(k, value)?;
        }
    }
    Ok(())
}

/// An offset or length template (a string, or a number as given).
fn as_template(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_what_references_use() {
        let vars: BTreeMap<String, Val> = [
            ("i".to_string(), Val::Int(3)),
            ("c".to_string(), Val::Text("b".into())),
        ]
        .into();
        assert_eq!(render("k{{i}}_{{ c }}", &vars).unwrap(), "k3_b");
        assert_eq!(render("{{(i + 1) * 1000}}", &vars).unwrap(), "4000");
        assert_eq!(render("{{ i // 2 - -1 }}{{i % 2}}", &vars).unwrap(), "21");
        assert_eq!(render("{{ c + c }}", &vars).unwrap(), "bb");
        for bad in [
            "{{ i|upper }}",
            "{{ x }}",
            "{{ c * 2 }}",
            "{{ i // 0 }}",
            "{{ i",
            "{{ (i }}",
        ] {
            assert!(render(bad, &vars).is_err(), "{bad}");
        }
    }

    #[test]
    fn arithmetic_is_checked_and_floors_as_python() {
        let vars: BTreeMap<String, Val> = BTreeMap::new();
        let min = "(-170141183460469231731687303715884105727 - 1)";
        for (expr, want) in [
            // Python: 7 // -2 == -4, 7 % -2 == -1, -7 // 2 == -4, -7 % 2 == 1.
            ("7 // -2", Some("-4")),
            ("7 % -2", Some("-1")),
            ("-7 // 2", Some("-4")),
            ("-7 % 2", Some("1")),
            ("-6 // 3", Some("-2")),
            ("6 % 3", Some("0")),
            (&format!("{min} // -1"), None),
            (&format!("{min} % -1"), Some("0")),
            (&format!("-{min}"), None),
            (&format!("{min} - 1"), None),
            (&format!("{min} * -1"), None),
            ("170141183460469231731687303715884105727 + 1", None),
            (
                &format!("{min} // 1"),
                Some("-170141183460469231731687303715884105728"),
            ),
        ] {
            let got = render(&format!("{{{{ {expr} }}}}"), &vars);
            match want {
                Some(w) => assert_eq!(got.as_deref(), Ok(w), "{expr}"),
                None => {
                    let e = got.unwrap_err();
                    assert!(e.contains("overflow"), "{expr}: {e}");
                }
            }
        }
        assert_eq!(floor_mod(i128::MIN, -1), Some(0));
        assert_eq!(floor_div(i128::MIN, -1), None);
        assert_eq!(floor_div(1, 0), None);
    }

    fn malformed(s: String) -> super::super::ParseError {
        super::super::ParseError::Malformed {
            origin: "t".into(),
            reason: s,
        }
    }

    #[test]
    fn counts_are_bounded_before_anything_is_generated() {
        let t = BTreeMap::new();
        let limits = super::super::ParseLimits::default();
        let mut made = 0u64;
        for (dims, why) in [
            // 2^27 references: within max_references, past max_generated.
            (
                serde_json::json!({"i": {"stop": 134_217_728}}),
                "max_generated, default 1048576",
            ),
            // The product overflows u64.
            (
                serde_json::json!({"i": {"stop": i64::MAX}, "j": {"stop": i64::MAX}, "k": {"stop": 4}}),
                "2^64 or more",
            ),
            (
                serde_json::json!({"i": {"start": i64::MIN, "stop": i64::MAX}}),
                "max_generated",
            ),
        ] {
            let g = serde_json::json!([{"key": "v/{{i}}", "url": "u", "dimensions": dims}]);
            let e = expand(
                &g,
                &t,
                &limits,
                0,
                &mut |_, _| {
                    made += 1;
                    Ok(())
                },
                &malformed,
            )
            .unwrap_err()
            .to_string();
            assert!(e.contains("\"gen\" entry 0") && e.contains(why), "{e}");
        }
        // Several entries add up.
        let one = serde_json::json!({"key": "v/{{i}}", "url": "u", "dimensions": {"i": {"stop": 600_000}}});
        let g = serde_json::json!([one.clone(), one]);
        let e = expand(
            &g,
            &t,
            &limits,
            0,
            &mut |_, _| {
                made += 1;
                Ok(())
            },
            &malformed,
        )
        .unwrap_err();
        assert!(e.to_string().contains("\"gen\" entry 1"), "{e}");
        assert_eq!(made, 600_000, "only the first entry was generated");
        // And count with the references already held against max_references.
        let small = super::super::ParseLimits {
            max_references: 10,
            ..limits
        };
        let g =
            serde_json::json!([{"key": "v/{{i}}", "url": "u", "dimensions": {"i": {"stop": 4}}}]);
        let e = expand(&g, &t, &small, 7, &mut |_, _| Ok(()), &malformed).unwrap_err();
        assert!(e.to_string().contains("max_references"), "{e}");
        expand(&g, &t, &small, 6, &mut |_, _| Ok(()), &malformed).unwrap();
    }

    #[test]
    fn range_values_are_checked() {
        let d = parse_dim(
            "i",
            &serde_json::json!({"start": i64::MAX, "stop": i64::MIN, "step": i64::MIN}),
        )
        .unwrap();
        // As Python's range(MAX, MIN, MIN): MAX, then -1.
        assert_eq!(d.len(), 2);
        assert_eq!(d.get(0), Ok(Val::Int(i128::from(i64::MAX))));
        assert_eq!(d.get(1), Ok(Val::Int(-1)));
        let d = Dim::Range {
            start: i128::MAX,
            step: 1,
            len: 2,
        };
        assert!(d.get(1).is_err());
        assert!(Dim::List(vec![]).get(0).is_err());
    }

    #[test]
    fn expands_entries_in_c_order() {
        let g = serde_json::json!([{"key": "v/{{i}}.{{j}}", "url": "{{u}}/f_{{i}}.nc",
            "offset": "{{ (i * 2 + j) * 100 }}", "length": 100,
            "dimensions": {"i": {"stop": 2}, "j": [0, 1]}}]);
        let t: BTreeMap<String, String> = [("u".to_string(), "s3://b".to_string())].into();
        let mut got = Vec::new();
        let bad = malformed;
        let limits = super::super::ParseLimits::with_max_chunks(10);
        expand(
            &g,
            &t,
            &limits,
            0,
            &mut |k, v| {
                got.push((k, v));
                Ok(())
            },
            &bad,
        )
        .unwrap();
        assert_eq!(got.len(), 4);
        assert_eq!(got[1].0, "v/0.1");
        assert_eq!(got[3].1, serde_json::json!(["s3://b/f_1.nc", 300, 100]));
        let limits = super::super::ParseLimits::with_max_chunks(3);
        let e = expand(&g, &t, &limits, 0, &mut |_, _| Ok(()), &bad).unwrap_err();
        assert!(e.to_string().contains("more than the 3"), "{e}");
    }
}
