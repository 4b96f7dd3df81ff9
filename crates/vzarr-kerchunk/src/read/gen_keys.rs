//! Generated keys (`gen`) of kerchunk version 1 references (kerchunk specification,
//! <https://fsspec.github.io/kerchunk/spec.html>, "Version 1"): each entry names `key`, `url`
//! and optionally `offset` and `length` as templates, and `dimensions`, each a list of values
//! or a range `{"start", "stop", "step"}`; one reference is generated per combination of the
//! dimensions' values, C order (the last dimension fastest), as fsspec expands them.
//!
//! fsspec renders the templates with Jinja2. Here `{{ ... }}` holds what references use in
//! practice: a dimension or template name, integers, `+ - * // %` and parentheses (`+` also
//! joins text); anything else (filters, calls, attribute access) is refused with the entry
//! named, never evaluated.

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

    fn get(&self, i: u64) -> Val {
        match self {
            Dim::List(v) => v[i as usize].clone(),
            Dim::Range { start, step, .. } => Val::Int(start + step * i128::from(i)),
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
                    (Val::Int(a), Val::Int(b)) => Val::Int(a.checked_add(b).ok_or("overflow")?),
                    (Val::Text(a), Val::Text(b)) => Val::Text(a + &b),
                    _ => return Err("+ of an integer and text".into()),
                };
            } else if self.eat("-") {
                let r = self.int_term(depth)?;
                v = Val::Int(int(&v)?.checked_sub(r).ok_or("overflow")?);
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
                "*" => a.checked_mul(b).ok_or("overflow")?,
                _ if b == 0 => return Err("division by zero".into()),
                "//" => a.div_euclid(b),
                _ => a.rem_euclid(b),
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
            return Ok(Val::Int(-int(&self.factor(depth + 1)?)?));
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
/// At most `limit` references in all; errors name the entry.
pub(super) fn expand(
    gen_: &Value,
    templates: &BTreeMap<String, String>,
    limit: u64,
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
            .try_fold(1u64, |a, (_, d)| a.checked_mul(d.len()))
            .filter(|&c| total.saturating_add(c) <= limit)
            .ok_or_else(|| e(format!("generates more than {limit} references")))?;
        total += count;
        let mut vars: BTreeMap<String, Val> = templates
            .iter()
            .map(|(k, v)| (k.clone(), Val::Text(v.clone())))
            .collect();
        for i in 0..count {
            let mut rest = i;
            for (name, d) in dims.iter().rev() {
                let len = d.len();
                vars.insert(name.clone(), d.get(rest % len));
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
    fn expands_entries_in_c_order() {
        let g = serde_json::json!([{"key": "v/{{i}}.{{j}}", "url": "{{u}}/f_{{i}}.nc",
            "offset": "{{ (i * 2 + j) * 100 }}", "length": 100,
            "dimensions": {"i": {"stop": 2}, "j": [0, 1]}}]);
        let t: BTreeMap<String, String> = [("u".to_string(), "s3://b".to_string())].into();
        let mut got = Vec::new();
        let bad = |s: String| super::super::ParseError::Malformed {
            origin: "t".into(),
            reason: s,
        };
        expand(
            &g,
            &t,
            10,
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
        let e = expand(&g, &t, 3, &mut |_, _| Ok(()), &bad).unwrap_err();
        assert!(e.to_string().contains("more than 3"), "{e}");
    }
}
