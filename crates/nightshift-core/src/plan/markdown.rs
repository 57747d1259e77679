//! The Markdown checklist plan source.
//!
//! * Every unchecked task line — `- [ ] text`, also with `*` or `+` bullets, ordered markers
//!   (`1.` or `1)`) and any leading indentation — is one item. Checked lines (`[x]`, `[X]`) are
//!   skipped with everything under them; every other line is ignored.
//! * Lines indented deeper than an item's bullet that are not task lines themselves (detail
//!   paragraphs, plain sub-bullets, indented code) are that item's detail: they are appended to
//!   its prompt after the first line, with their common indentation removed. Blank lines inside
//!   the detail are kept; a line indented no deeper than the bullet ends the item.
//! * Fenced code blocks (```` ``` ```` or `~~~`) and HTML comment blocks (`<!--` … `-->`) at the
//!   top level never produce items.
//! * An item's id is [`slug_id`] of its first line, unless the line ends with an explicit id in
//!   braces: `- [ ] Add a greet() function {#add-greeting}`. If several items slug to the same
//!   id, the first (in file order) keeps it and each later one gets `-<first 6 hex digits of
//!   sha256(prompt)>` appended; items with identical prompts are an error.

use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;

use super::id::{ID_HELP, short_hash, slug_id, validate_id};
use super::{Item, ItemSource, PlanError};
use crate::config::SourceError;

const EXPLICIT_ID_HELP: &str = "remove the duplicate, or give one of them an explicit id at the \
     end of its line: `- [ ] text {#my-id}`";

/// One item with where its id comes from in the source, for errors found later.
pub(crate) struct ParsedItem {
    pub item: Item,
    /// The explicit `{#id}`, or the item's text when the id was derived.
    pub id_span: Range<usize>,
}

/// Parses a Markdown checklist into items in file order. `file_name` is used in errors and as
/// the items' [`ItemSource::Markdown`] path. A checklist with no unchecked item gives an empty
/// vector.
pub fn parse_markdown(source: &str, file_name: &str) -> Result<Vec<Item>, PlanError> {
    Ok(parse(source, file_name)?
        .into_iter()
        .map(|parsed| parsed.item)
        .collect())
}

/// A task line being read: its first line is known, detail lines are still coming.
struct Pending<'a> {
    line: usize,
    indent: usize,
    title: String,
    explicit_id: Option<(String, Range<usize>)>,
    text_span: Range<usize>,
    detail: Vec<&'a str>,
}

enum Block<'a> {
    None,
    Open(Pending<'a>),
    Checked { indent: usize },
}

impl Block<'_> {
    fn indent(&self) -> Option<usize> {
        match self {
            Block::None => None,
            Block::Open(pending) => Some(pending.indent),
            Block::Checked { indent } => Some(*indent),
        }
    }
}

pub(crate) fn parse(source: &str, file_name: &str) -> Result<Vec<ParsedItem>, Box<SourceError>> {
    let error =
        |span: Range<usize>, message: String| SourceError::new(file_name, source, span, message);
    if let Some(at) = source.find('\0') {
        return Err(
            error(at..at + 1, "the plan holds a NUL character".to_owned())
                .with_help("remove it: a prompt is text, and git cannot carry a NUL")
                .into(),
        );
    }
    let mut pendings: Vec<Pending<'_>> = Vec::new();
    let mut block = Block::None;
    let mut fence: Option<&str> = None;
    let mut in_comment = false;
    let mut offset = 0;
    for (index, raw_line) in source.split_inclusive('\n').enumerate() {
        let mut line_start = offset;
        offset += raw_line.len();
        let mut line = raw_line
            .strip_suffix('\n')
            .map_or(raw_line, |line| line.strip_suffix('\r').unwrap_or(line));
        if index == 0
            && let Some(rest) = line.strip_prefix('\u{feff}')
        {
            line_start += '\u{feff}'.len_utf8();
            line = rest;
        }
        let content = line.trim_start_matches([' ', '\t']);
        let indent = indent_width(&line[..line.len() - content.len()]);

        let task = if fence.is_none() && !in_comment {
            task_line(line)
        } else {
            None
        };
        if let Some(task) = task {
            // A task line under a checked one (checked or not) belongs to the finished task
            // and is skipped with it.
            if let Block::Checked { indent: bullet } = block
                && indent > bullet
            {
                continue;
            }
            if let Block::Open(pending) = std::mem::replace(&mut block, Block::None) {
                pendings.push(pending);
            }
            if task.checked {
                block = Block::Checked { indent };
                continue;
            }
            let text_span = line_start + task.text.start..line_start + task.text.end;
            let mut title = &line[task.text.clone()];
            let mut explicit_id = None;
            if let Some(inner) = title.strip_suffix('}')
                && let Some(open) = inner.rfind("{#")
                && !inner[open + 2..].contains(['{', '}'])
            {
                let id = &inner[open + 2..];
                let id_span = text_span.start + open..text_span.end;
                if let Err(reason) = validate_id(id) {
                    return Err(error(id_span, format!("invalid item id `{id}`: {reason}"))
                        .with_help(ID_HELP)
                        .into());
                }
                explicit_id = Some((id.to_owned(), id_span));
                title = title[..open].trim_end();
            }
            if title.is_empty() {
                let span = line_start + task.marker..line_start + line.trim_end().len();
                return Err(error(span, "empty checklist item".to_owned())
                    .with_help("write the task after `- [ ]`, or remove the line")
                    .into());
            }
            block = Block::Open(Pending {
                line: index + 1,
                indent,
                title: title.to_owned(),
                explicit_id,
                text_span,
                detail: Vec::new(),
            });
        } else if content.is_empty() {
            if let Block::Open(pending) = &mut block {
                pending.detail.push("");
            }
        } else if block.indent().is_some_and(|bullet| indent > bullet) {
            if let Block::Open(pending) = &mut block {
                pending.detail.push(line);
            }
        } else if let Block::Open(pending) = std::mem::replace(&mut block, Block::None) {
            pendings.push(pending);
        }

        // Track fences and comments after the line has been placed: an indented fence inside an
        // item's detail is detail, and still shields the lines inside it from being tasks.
        if let Some(marker) = fence {
            if content.starts_with(marker) {
                fence = None;
            }
        } else if in_comment {
            if content.contains("-->") {
                in_comment = false;
            }
        } else if content.starts_with("```") {
            fence = Some("```");
        } else if content.starts_with("~~~") {
            fence = Some("~~~");
        } else if let Some(rest) = content.strip_prefix("<!--") {
            in_comment = !rest.contains("-->");
        }
    }
    if let Block::Open(pending) = block {
        pendings.push(pending);
    }
    assign_ids(pendings, source, file_name)
}

fn assign_ids(
    pendings: Vec<Pending<'_>>,
    source: &str,
    file_name: &str,
) -> Result<Vec<ParsedItem>, Box<SourceError>> {
    let error = |span: Range<usize>, message: String| {
        SourceError::new(file_name, source, span, message).with_help(EXPLICIT_ID_HELP)
    };
    let prompts: Vec<String> = pendings.iter().map(Pending::prompt).collect();
    // id → index of the item holding it
    let mut taken: HashMap<String, usize> = HashMap::new();
    for (index, pending) in pendings.iter().enumerate() {
        if let Some((id, span)) = &pending.explicit_id {
            if let Some(&first) = taken.get(id) {
                return Err(error(
                    span.clone(),
                    format!(
                        "duplicate item id `{id}` (first used on line {})",
                        pendings[first].line
                    ),
                )
                .into());
            }
            taken.insert(id.clone(), index);
        }
    }
    let mut ids: Vec<String> = Vec::with_capacity(pendings.len());
    for (index, pending) in pendings.iter().enumerate() {
        let id = match &pending.explicit_id {
            Some((id, _)) => id.clone(),
            None => {
                let slug = slug_id(&pending.title);
                let id = if let Some(&holder) = taken.get(&slug) {
                    if prompts[holder] == prompts[index] {
                        return Err(error(
                            pending.text_span.clone(),
                            format!(
                                "duplicate checklist item (same text as line {})",
                                pendings[holder].line
                            ),
                        )
                        .into());
                    }
                    let suffixed = format!("{slug}-{}", short_hash(&prompts[index]));
                    if let Some(&holder) = taken.get(&suffixed) {
                        let line = pendings[holder].line;
                        let message = if prompts[holder] == prompts[index] {
                            format!("duplicate checklist item (same text as line {line})")
                        } else {
                            format!("item id `{suffixed}` is already used on line {line}")
                        };
                        return Err(error(pending.text_span.clone(), message).into());
                    }
                    suffixed
                } else {
                    slug
                };
                taken.insert(id.clone(), index);
                id
            }
        };
        ids.push(id);
    }
    let path = PathBuf::from(file_name);
    Ok(pendings
        .into_iter()
        .zip(prompts)
        .zip(ids)
        .map(|((pending, prompt), id)| ParsedItem {
            item: Item {
                id,
                prompt,
                check: None,
                source: ItemSource::Markdown {
                    path: path.clone(),
                    line: pending.line,
                },
            },
            id_span: pending
                .explicit_id
                .map_or(pending.text_span, |(_, span)| span),
        })
        .collect())
}

impl Pending<'_> {
    /// The first line, then the detail lines with their common indentation removed.
    fn prompt(&self) -> String {
        let first = self.detail.iter().position(|line| !line.trim().is_empty());
        let last = self.detail.iter().rposition(|line| !line.trim().is_empty());
        let (Some(first), Some(last)) = (first, last) else {
            return self.title.clone();
        };
        let detail = &self.detail[first..=last];
        let common = detail
            .iter()
            .filter(|line| !line.trim().is_empty())
            .map(|line| line.len() - line.trim_start_matches([' ', '\t']).len())
            .min()
            .unwrap_or(0);
        let mut prompt = self.title.clone();
        for line in detail {
            prompt.push('\n');
            // leading whitespace is ASCII, so `common` is a char boundary of non-blank lines
            prompt.push_str(line.get(common..).unwrap_or("").trim_end());
        }
        prompt
    }
}

/// A task line's parts, as byte ranges of the line.
struct TaskLine {
    /// Where the bullet or number starts.
    marker: usize,
    checked: bool,
    /// The text after the checkbox, trimmed.
    text: Range<usize>,
}

/// Recognises `- [ ] text`, `* [x] text`, `+ [X]`, `1. [ ] text`, `1) [ ] text`, with any
/// indentation; the checkbox must be followed by whitespace or the end of the line.
fn task_line(line: &str) -> Option<TaskLine> {
    let content = line.trim_start_matches([' ', '\t']);
    let marker = line.len() - content.len();
    let after_marker = match content.strip_prefix(['-', '*', '+']) {
        Some(rest) => rest,
        None => {
            let digits = content.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 || digits > 9 {
                return None;
            }
            content[digits..].strip_prefix(['.', ')'])?
        }
    };
    let at_box = after_marker.trim_start_matches([' ', '\t']);
    if at_box.len() == after_marker.len() {
        return None;
    }
    let (checked, after_box) = if let Some(rest) = at_box.strip_prefix("[ ]") {
        (false, rest)
    } else if let Some(rest) = at_box
        .strip_prefix("[x]")
        .or_else(|| at_box.strip_prefix("[X]"))
    {
        (true, rest)
    } else {
        return None;
    };
    if !(after_box.is_empty() || after_box.starts_with([' ', '\t'])) {
        return None;
    }
    let text = after_box.trim();
    let start = line.len() - after_box.trim_start().len();
    Some(TaskLine {
        marker,
        checked,
        text: start..start + text.len(),
    })
}

/// Width of leading whitespace, with tabs advancing to the next multiple of 4.
fn indent_width(whitespace: &str) -> usize {
    whitespace.chars().fold(0, |width, c| {
        if c == '\t' {
            width + 4 - width % 4
        } else {
            width + 1
        }
    })
}

#[cfg(test)]
mod tests;
