//! A small, strict XML reader: enough for JUnit reports, nothing more.
//!
//! Handles elements, attributes (single or double quoted, values normalized as XML requires),
//! the entities `&lt; &gt; &amp; &quot; &apos;` and numeric references, CDATA sections,
//! comments, processing instructions (the XML declaration among them) and a DOCTYPE without an
//! internal subset, which is skipped. Internal DTD subsets are refused (no entity expansion).
//! Text content is checked for well-formed references and otherwise skipped: JUnit's test
//! states live in element names and attributes. Linear in the input.

use std::borrow::Cow;

/// A well-formedness problem, with the byte offset where it was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed xml at byte {at}: {what}")]
pub(super) struct XmlError {
    pub at: usize,
    pub what: &'static str,
}

/// One element boundary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Event<'a> {
    /// A start tag; `empty` for `<a/>`, which has no matching [`Event::End`].
    Start {
        name: &'a str,
        attrs: Vec<(&'a str, Cow<'a, str>)>,
        empty: bool,
    },
    End {
        name: &'a str,
    },
}

impl<'a> Event<'a> {
    /// The value of attribute `key` of a start tag.
    pub fn attr(&self, key: &str) -> Option<&str> {
        match self {
            Event::Start { attrs, .. } => attrs
                .iter()
                .find(|(name, _)| *name == key)
                .map(|(_, value)| value.as_ref()),
            Event::End { .. } => None,
        }
    }
}

/// Reads one element (the root) and its content starting at a `<`, checking that tags nest.
pub(super) struct Reader<'a> {
    src: &'a str,
    pos: usize,
    open: Vec<&'a str>,
    started: bool,
}

impl<'a> Reader<'a> {
    /// A reader for the element whose start tag begins at `pos` in `src`.
    pub fn new(src: &'a str, pos: usize) -> Reader<'a> {
        Reader {
            src,
            pos,
            open: Vec::new(),
            started: false,
        }
    }

    /// The byte offset just past what has been read.
    pub fn position(&self) -> usize {
        self.pos
    }

    fn err(&self, what: &'static str) -> XmlError {
        XmlError { at: self.pos, what }
    }

    /// The next element boundary, or `None` once the root element is closed.
    pub fn next_event(&mut self) -> Result<Option<Event<'a>>, XmlError> {
        if self.started && self.open.is_empty() {
            return Ok(None);
        }
        loop {
            let rest = &self.src[self.pos..];
            if !self.started {
                if !rest.starts_with('<') {
                    return Err(self.err("expected an element"));
                }
            } else {
                // Text up to the next markup: references must be well formed.
                let text_len = rest.find('<').ok_or(XmlError {
                    at: self.src.len(),
                    what: "unclosed element",
                })?;
                check_text(&rest[..text_len]).map_err(|what| self.err(what))?;
                self.pos += text_len;
            }
            let rest = &self.src[self.pos..];
            if let Some(after) = rest.strip_prefix("<!--") {
                let end = after
                    .find("-->")
                    .ok_or_else(|| self.err("unclosed comment"))?;
                self.pos += 4 + end + 3;
            } else if let Some(after) = rest.strip_prefix("<![CDATA[") {
                if !self.started {
                    return Err(self.err("cdata outside the root element"));
                }
                let end = after
                    .find("]]>")
                    .ok_or_else(|| self.err("unclosed cdata section"))?;
                self.pos += 9 + end + 3;
            } else if let Some(after) = rest.strip_prefix("<?") {
                let end = after
                    .find("?>")
                    .ok_or_else(|| self.err("unclosed processing instruction"))?;
                self.pos += 2 + end + 2;
            } else if rest.starts_with("<!") {
                return Err(self.err("declarations are not allowed inside elements"));
            } else if let Some(after) = rest.strip_prefix("</") {
                let (name, len) = read_name(after).ok_or_else(|| self.err("bad end tag"))?;
                let tail = &after[len..];
                let trimmed = tail.trim_start_matches(is_xml_space);
                if !trimmed.starts_with('>') {
                    return Err(self.err("bad end tag"));
                }
                if self.open.pop() != Some(name) {
                    return Err(self.err("mismatched end tag"));
                }
                self.pos += 2 + len + (tail.len() - trimmed.len()) + 1;
                return Ok(Some(Event::End { name }));
            } else {
                self.started = true;
                return self.start_tag().map(Some);
            }
        }
    }

    fn start_tag(&mut self) -> Result<Event<'a>, XmlError> {
        let src = self.src;
        let mut at = self.pos + 1;
        let (name, len) = read_name(&src[at..]).ok_or_else(|| self.err("bad start tag"))?;
        at += len;
        let mut attrs: Vec<(&'a str, Cow<'a, str>)> = Vec::new();
        loop {
            let before = at;
            at += src[at..].len() - src[at..].trim_start_matches(is_xml_space).len();
            let rest = &src[at..];
            if rest.starts_with("/>") {
                self.pos = at + 2;
                return Ok(Event::Start {
                    name,
                    attrs,
                    empty: true,
                });
            }
            if rest.starts_with('>') {
                self.pos = at + 1;
                self.open.push(name);
                return Ok(Event::Start {
                    name,
                    attrs,
                    empty: false,
                });
            }
            if at == before {
                return Err(XmlError {
                    at,
                    what: "expected whitespace before an attribute",
                });
            }
            let (key, len) = read_name(rest).ok_or(XmlError {
                at,
                what: "bad attribute",
            })?;
            at += len;
            at += src[at..].len() - src[at..].trim_start_matches(is_xml_space).len();
            if !src[at..].starts_with('=') {
                return Err(XmlError {
                    at,
                    what: "expected `=` after an attribute name",
                });
            }
            at += 1;
            at += src[at..].len() - src[at..].trim_start_matches(is_xml_space).len();
            let quote = match src[at..].chars().next() {
                Some(q @ ('"' | '\'')) => q,
                _ => {
                    return Err(XmlError {
                        at,
                        what: "attribute value must be quoted",
                    });
                }
            };
            at += 1;
            let end = src[at..].find(quote).ok_or(XmlError {
                at,
                what: "unclosed attribute value",
            })?;
            let raw = &src[at..at + end];
            let value = attr_value(raw).map_err(|what| XmlError { at, what })?;
            if attrs.iter().any(|(k, _)| *k == key) {
                return Err(XmlError {
                    at,
                    what: "duplicate attribute",
                });
            }
            attrs.push((key, value));
            at += end + 1;
        }
    }
}

/// Skips a document prolog at `pos`: whitespace, the XML declaration, processing instructions,
/// comments and a DOCTYPE without an internal subset. Returns where the root element starts.
pub(super) fn skip_prolog(src: &str, mut pos: usize) -> Result<usize, XmlError> {
    loop {
        let rest = &src[pos..];
        let trimmed = rest.trim_start_matches(is_xml_space);
        pos += rest.len() - trimmed.len();
        if let Some(after) = trimmed.strip_prefix("<?") {
            let end = after.find("?>").ok_or(XmlError {
                at: pos,
                what: "unclosed processing instruction",
            })?;
            pos += 2 + end + 2;
        } else if let Some(after) = trimmed.strip_prefix("<!--") {
            let end = after.find("-->").ok_or(XmlError {
                at: pos,
                what: "unclosed comment",
            })?;
            pos += 4 + end + 3;
        } else if let Some(after) = trimmed.strip_prefix("<!DOCTYPE") {
            let end = after.find('>').ok_or(XmlError {
                at: pos,
                what: "unclosed doctype",
            })?;
            if after[..end].contains('[') {
                return Err(XmlError {
                    at: pos,
                    what: "internal dtd subsets are not supported",
                });
            }
            pos += 9 + end + 1;
        } else {
            return Ok(pos);
        }
    }
}

fn is_xml_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// A name at the start of `s` and its byte length.
fn read_name(s: &str) -> Option<(&str, usize)> {
    let len = s
        .find(|c: char| is_xml_space(c) || matches!(c, '/' | '>' | '=' | '<' | '"' | '\'' | '&'))
        .unwrap_or(s.len());
    let name = &s[..len];
    let first = name.chars().next()?;
    if first.is_ascii_digit() || matches!(first, '-' | '.') {
        return None;
    }
    Some((name, len))
}

/// Checks text content: no `]]>` outside CDATA, and every `&` starts a valid reference.
fn check_text(text: &str) -> Result<(), &'static str> {
    if text.contains("]]>") {
        return Err("`]]>` in text");
    }
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        let (_, len) = reference(&rest[at..])?;
        rest = &rest[at + len..];
    }
    Ok(())
}

/// Decodes an attribute value: references expanded, literal whitespace normalized to spaces
/// (a CR LF pair to one space).
fn attr_value(raw: &str) -> Result<Cow<'_, str>, &'static str> {
    if raw.contains('<') {
        return Err("`<` in an attribute value");
    }
    if !raw.contains(['&', '\t', '\n', '\r']) {
        return Ok(Cow::Borrowed(raw));
    }
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find(['&', '\t', '\n', '\r']) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if tail.starts_with('&') {
            let (c, len) = reference(tail)?;
            out.push(c);
            rest = &tail[len..];
        } else {
            out.push(' ');
            let skip = if tail.starts_with("\r\n") { 2 } else { 1 };
            rest = &tail[skip..];
        }
    }
    out.push_str(rest);
    Ok(Cow::Owned(out))
}

/// The character a reference at the start of `s` (which starts with `&`) stands for, and the
/// reference's byte length.
fn reference(s: &str) -> Result<(char, usize), &'static str> {
    // The longest valid reference is `&#x10FFFF;` or `&#1114111;`; names are at most `apos`.
    let end = s
        .bytes()
        .take(12)
        .position(|b| b == b';')
        .ok_or("bad entity reference")?;
    let body = &s[1..end];
    let c = match body {
        "lt" => '<',
        "gt" => '>',
        "amp" => '&',
        "quot" => '"',
        "apos" => '\'',
        _ => {
            let code = if let Some(hex) = body.strip_prefix("#x") {
                if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err("bad character reference");
                }
                u32::from_str_radix(hex, 16).map_err(|_| "bad character reference")?
            } else if let Some(dec) = body.strip_prefix('#') {
                if dec.is_empty() || !dec.bytes().all(|b| b.is_ascii_digit()) {
                    return Err("bad character reference");
                }
                dec.parse::<u32>().map_err(|_| "bad character reference")?
            } else {
                return Err("unknown entity");
            };
            let c = char::from_u32(code).ok_or("bad character reference")?;
            let allowed = matches!(c, '\t' | '\n' | '\r') || (c >= ' ' && c != '\u{fffe}');
            if !allowed {
                return Err("character reference to a forbidden character");
            }
            c
        }
    };
    Ok((c, end + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(src: &str) -> Result<Vec<Event<'_>>, XmlError> {
        let start = skip_prolog(src, 0)?;
        let mut reader = Reader::new(src, start);
        let mut out = Vec::new();
        while let Some(event) = reader.next_event()? {
            out.push(event);
        }
        Ok(out)
    }

    #[test]
    fn reads_elements_attributes_and_entities() {
        let src = "<?xml version=\"1.0\"?>\n<!-- hi --><!DOCTYPE a SYSTEM \"a.dtd\">\
                   <a x='1 &lt; 2' y=\"&quot;&amp;&apos;&gt;&#65;&#x42;\">text &amp; more\
                   <b/><![CDATA[ <not> & a tag ]]><c z=\"line\nnext\r\nthird\"></c ></a>";
        let got = events(src).unwrap();
        assert_eq!(got.len(), 5);
        assert_eq!(got[0].attr("x"), Some("1 < 2"));
        assert_eq!(got[0].attr("y"), Some("\"&'>AB"));
        assert!(matches!(
            got[1],
            Event::Start {
                name: "b",
                empty: true,
                ..
            }
        ));
        assert_eq!(got[2].attr("z"), Some("line next third"));
        assert_eq!(got[3], Event::End { name: "c" });
        assert_eq!(got[4], Event::End { name: "a" });
    }

    #[test]
    fn stops_after_the_root_element() {
        let src = "<a></a><b>";
        let mut reader = Reader::new(src, 0);
        assert!(reader.next_event().unwrap().is_some());
        assert!(reader.next_event().unwrap().is_some());
        assert_eq!(reader.next_event().unwrap(), None);
        assert_eq!(reader.position(), 7);
    }

    #[test]
    fn refuses_malformed_input() {
        for bad in [
            "<a><b></a>",
            "<a x=1></a>",
            "<a x='1' x='2'></a>",
            "<a x='<'></a>",
            "<a>&bogus;</a>",
            "<a>&#0;</a>",
            "<a>&#xZZ;</a>",
            "<a>& loose</a>",
            "<a><!-- unclosed </a>",
            "<a><![CDATA[ unclosed </a>",
            "<a>",
            "<a x='1'y='2'></a>",
            "<!DOCTYPE a [<!ENTITY e \"boom\">]><a>&e;</a>",
            "<a><!DOCTYPE b></a>",
            "<a>]]></a>",
        ] {
            assert!(events(bad).is_err(), "accepted {bad:?}");
        }
    }
}
