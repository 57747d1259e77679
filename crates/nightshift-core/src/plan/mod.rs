//! Plan sources → items: the `[[item]]` tables of `nightshift.toml`, then a Markdown checklist
//! (see [`markdown`](parse_markdown) for its syntax, including explicit ids `{#my-id}`).

mod id;
mod markdown;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

pub use id::{ID_HELP, MAX_ID_LEN, MAX_SLUG_LEN, slug_id, validate_id};
pub use markdown::parse_markdown;

use crate::config::{Config, SourceError};

/// The ordered queue of items.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    pub items: Vec<Item>,
}

impl Plan {
    /// The item with this id, if any.
    pub fn get(&self, id: &str) -> Option<&Item> {
        self.items.iter().find(|item| item.id == id)
    }
}

/// One unit of work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// Unique in the plan; passes [`validate_id`].
    pub id: String,
    /// What the agent is asked to do.
    pub prompt: String,
    /// The item's own check command line, replacing `[check].command`.
    pub check: Option<String>,
    /// Where the item was defined.
    pub source: ItemSource,
}

/// Where an item was defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemSource {
    /// An `[[item]]` table of `nightshift.toml`.
    Config,
    /// A task line of a Markdown checklist; `path` as configured (relative to the repository
    /// root), `line` 1-based.
    Markdown { path: PathBuf, line: usize },
}

/// Why the plan could not be built.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A plan file could not be read.
    #[error("read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A plan file is not a valid plan.
    #[error("{0}")]
    Invalid(Box<SourceError>),
}

impl From<SourceError> for PlanError {
    fn from(error: SourceError) -> Self {
        Self::Invalid(Box::new(error))
    }
}

impl From<Box<SourceError>> for PlanError {
    fn from(error: Box<SourceError>) -> Self {
        Self::Invalid(error)
    }
}

/// Builds the plan: `[[item]]` entries first (in file order), then the Markdown checklist if
/// `config.plan` is set (path relative to `root`). A Markdown item whose id is already used by
/// an `[[item]]` is an error located in the Markdown file.
pub fn load(config: &Config, root: &Path) -> Result<Plan, PlanError> {
    let mut items: Vec<Item> = config
        .items
        .iter()
        .map(|item| Item {
            id: item.id.clone(),
            prompt: item.prompt.clone(),
            check: item.check.clone(),
            source: ItemSource::Config,
        })
        .collect();
    if let Some(plan_path) = &config.plan {
        let path = root.join(plan_path);
        let source = crate::bounded::read_to_string(&path, crate::bounded::CONFIG_BYTES)
            .map_err(|source| PlanError::Read { path, source })?;
        let file_name = plan_path.display().to_string();
        let config_ids: HashSet<&str> = config.items.iter().map(|item| item.id.as_str()).collect();
        for parsed in markdown::parse(&source, &file_name)? {
            if config_ids.contains(parsed.item.id.as_str()) {
                return Err(SourceError::new(
                    &file_name,
                    source.as_str(),
                    parsed.id_span,
                    format!(
                        "item id `{}` is already used by an [[item]] in {}",
                        parsed.item.id,
                        crate::config::FILE_NAME
                    ),
                )
                .with_help(
                    "give this checklist item another id at the end of its line: \
                     `- [ ] text {#other-id}`, or rename the [[item]]",
                )
                .into());
            }
            items.push(parsed.item);
        }
    }
    Ok(Plan { items })
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
