//! A bounded element tree of a DMR++ document, read with `quick-xml`'s pull parser: element
//! names and attribute names without their namespace prefix (Hyrax's own reader, libdap's
//! `D4ParserSax2`, matches DAP4 and `dmrpp:` elements by local name), attribute values and
//! text with the five predefined entities and character references resolved. Bytes that are
//! not UTF-8 (sidecars declaring ISO-8859-1) are taken lossily.
//!
//! Untrusted input: the document is at most [`crate::MAX_SIDECAR_BYTES`] (the caller's
//! check), elements nest at most [`MAX_DEPTH`] deep, and elements and attributes together
//! number at most [`MAX_NODES`] (each costs about 100 bytes of tree however short its text,
//! so at most about 1 GiB), so the tree costs a bounded amount whatever the input.

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

/// Deepest nesting of elements read.
pub(crate) const MAX_DEPTH: usize = 256;

/// Most elements and attributes, together, read from one document (ICESat-2 ATL08's 2.2 MB
/// sidecar has about 60,000).
pub(crate) const MAX_NODES: usize = 1 << 23;

/// One element: its local name, its attributes (local names) in document order, the text
/// directly inside it and its child elements.
#[derive(Debug, Default)]
pub(crate) struct Element {
    pub(crate) name: String,
    pub(crate) attrs: Vec<(String, String)>,
    pub(crate) text: String,
    pub(crate) children: Vec<Element>,
}

impl Element {
    /// The value of the attribute with local name `name`.
    pub(crate) fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The child elements named `name`.
    pub(crate) fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> {
        self.children.iter().filter(move |c| c.name == name)
    }

    /// The first child element named `name`.
    pub(crate) fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }
}

/// Parses a document into its root element, or says why it is not well-formed XML.
pub(crate) fn parse(bytes: &[u8]) -> Result<Element, String> {
    parse_bounded(bytes, MAX_NODES)
}

/// [`parse`] with at most `max_nodes` elements and attributes.
fn parse_bounded(bytes: &[u8], max_nodes: usize) -> Result<Element, String> {
    let mut reader = Reader::from_reader(bytes);
    reader.config_mut().check_end_names = true;
    let mut buf = Vec::new();
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    let mut count = Budget {
        used: 0,
        max: max_nodes,
    };
    loop {
        let at = reader.buffer_position();
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|e| format!("not well-formed XML near byte {at}: {e}"))?;
        match event {
            Event::Start(e) => {
                let el = element(&e, &mut count, stack.len())?;
                stack.push(el);
            }
            Event::Empty(e) => {
                let el = element(&e, &mut count, stack.len())?;
                close(el, &mut stack, &mut root)?;
            }
            Event::End(_) => {
                let done = stack
                    .pop()
                    .ok_or_else(|| format!("an end tag without its start near byte {at}"))?;
                close(done, &mut stack, &mut root)?;
            }
            Event::Text(t) => match stack.last_mut() {
                Some(top) => top.text.push_str(&String::from_utf8_lossy(&t)),
                None if !t.iter().all(u8::is_ascii_whitespace) => {
                    let text = String::from_utf8_lossy(&t);
                    let line = text.trim().lines().next().unwrap_or_default();
                    return Err(format!(
                        "text outside the root element near byte {at}: \"{}\"",
                        line.chars().take(60).collect::<String>()
                    ));
                }
                None => {}
            },
            Event::CData(t) => {
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&String::from_utf8_lossy(&t));
                }
            }
            Event::GeneralRef(r) => {
                let text = entity(&r).ok_or_else(|| {
                    format!(
                        "unknown entity &{}; near byte {at}",
                        String::from_utf8_lossy(&r)
                    )
                })?;
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&text);
                }
            }
            Event::Eof => break,
            // Declarations, comments, processing instructions, doctypes.
            _ => {}
        }
        buf.clear();
    }
    if !stack.is_empty() {
        return Err(format!(
            "the document ends inside <{}>",
            stack.last().map_or("", |e| e.name.as_str())
        ));
    }
    root.ok_or_else(|| "no root element".to_string())
}

/// The nodes (elements and attributes) read so far against the most allowed.
struct Budget {
    used: usize,
    max: usize,
}

impl Budget {
    /// Counts one node.
    fn take(&mut self) -> Result<(), String> {
        self.used += 1;
        if self.used > self.max {
            return Err(format!("over {} elements and attributes", self.max));
        }
        Ok(())
    }
}

/// Ends `done`: a child of the element above it, or the root.
fn close(done: Element, stack: &mut [Element], root: &mut Option<Element>) -> Result<(), String> {
    match stack.last_mut() {
        Some(parent) => parent.children.push(done),
        None if root.is_none() => *root = Some(done),
        None => return Err(format!("a second root element <{}>", done.name)),
    }
    Ok(())
}

/// An element at nesting `depth` with its local name and attributes (malformed attributes
/// are left out), it and its attributes counted in `count`.
fn element(e: &BytesStart<'_>, count: &mut Budget, depth: usize) -> Result<Element, String> {
    if depth >= MAX_DEPTH {
        return Err(format!("elements nested over {MAX_DEPTH} deep"));
    }
    count.take()?;
    let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
    let mut attrs = Vec::new();
    for a in e.attributes().filter_map(Result::ok) {
        count.take()?;
        attrs.push((
            String::from_utf8_lossy(a.key.local_name().as_ref()).into_owned(),
            unescape(&a.value),
        ));
    }
    Ok(Element {
        name,
        attrs,
        ..Element::default()
    })
}

/// An attribute value with its entity and character references resolved (an unknown one kept
/// as written).
fn unescape(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    if !text.contains('&') {
        return text.into_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_ref();
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let tail = &rest[amp + 1..];
        match tail.find(';').filter(|&semi| semi <= 10) {
            Some(semi) => match entity(&tail.as_bytes()[..semi]) {
                Some(t) => {
                    out.push_str(&t);
                    rest = &tail[semi + 1..];
                }
                None => {
                    out.push('&');
                    rest = tail;
                }
            },
            None => {
                out.push('&');
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The text of an entity reference's name (`lt`, `#65`, `#x41`).
fn entity(name: &[u8]) -> Option<String> {
    Some(match name {
        b"lt" => "<".into(),
        b"gt" => ">".into(),
        b"amp" => "&".into(),
        b"quot" => "\"".into(),
        b"apos" => "'".into(),
        [b'#', b'x' | b'X', hex @ ..] => {
            char::from_u32(u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?)?
                .to_string()
        }
        [b'#', dec @ ..] => {
            char::from_u32(std::str::from_utf8(dec).ok()?.parse().ok()?)?.to_string()
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_names_entities_and_bounds() {
        let doc = br#"<?xml version="1.0"?><d:Dataset xmlns:d="x" d:name="a&amp;b">
            <Value>1 &lt; 2&#33;</Value><dmrpp:chunk offset="4"/></d:Dataset>"#;
        let root = parse(doc).unwrap();
        assert_eq!(root.name, "Dataset");
        assert_eq!(root.attr("name"), Some("a&b"));
        assert_eq!(root.child("Value").unwrap().text, "1 < 2!");
        assert_eq!(root.child("chunk").unwrap().attr("offset"), Some("4"));
        assert!(parse(b"<a><b></a>").is_err());
        assert!(parse(b"<a>").unwrap_err().contains("ends inside"));
        assert!(parse(b"<a/><b/>").unwrap_err().contains("second root"));
        assert!(parse(b"").is_err());
        // A debug line a tool wrote before the XML (two of bes's HDF4 sidecars).
        assert!(
            parse(b"number of blocks: 1\n<?xml version=\"1.0\"?><a/>")
                .unwrap_err()
                .contains("text outside the root element near byte 0: \"number of blocks: 1\"")
        );
        assert!(parse(b"<a/>\n  text").is_err());
        let deep = "<a>".repeat(MAX_DEPTH + 1);
        assert!(parse(deep.as_bytes()).unwrap_err().contains("nested"));
        // Attributes count as nodes: one element cannot hold millions of them.
        let mut flood = String::from("<a");
        for i in 0..100 {
            flood.push_str(&format!(" x{i}=\"\""));
        }
        flood.push_str("/>");
        assert!(parse_bounded(flood.as_bytes(), 101).is_ok());
        assert!(
            parse_bounded(flood.as_bytes(), 100)
                .unwrap_err()
                .contains("attributes")
        );
        assert!(parse_bounded(b"<a><b/><c/></a>", 2).is_err());
    }
}
