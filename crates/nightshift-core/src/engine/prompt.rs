//! The prompt a session receives (written to `NIGHTSHIFT_PROMPT_FILE`).

/// What goes into a session's prompt.
pub(super) struct PromptInput<'a> {
    pub item: &'a str,
    pub prompt: &'a str,
    pub check: &'a str,
    pub iteration: u32,
    pub max_iterations: u32,
    pub feedback: Option<&'a str>,
    /// Set when this session follows a silent one (the n-th nudge).
    pub nudge: Option<u32>,
    /// Set for a conflict repair iteration.
    pub conflict: Option<&'a ConflictNote>,
}

/// What a conflict repair session is told.
pub(super) struct ConflictNote {
    /// The conflicting paths, one per line.
    pub paths: String,
    /// The target's commits since the attempt's base (`git log --oneline`).
    pub target_log: String,
}

/// The full prompt text.
pub(super) fn compose(input: &PromptInput<'_>) -> String {
    let mut text = format!(
        "# {item}\n\n{prompt}\n\n---\nWhen you finish, nightshift runs this check in your working directory; exit 0 means done:\n\n    {check}\n\nThis is iteration {i} of at most {max}. nightshift commits your changes itself.\n",
        item = input.item,
        prompt = input.prompt.trim(),
        check = input.check,
        i = input.iteration,
        max = input.max_iterations,
    );
    if let Some(c) = input.conflict {
        text.push_str(&format!(
            "\n## Resolve a merge conflict with the target\n\nWhile you worked, the target branch moved. nightshift has started merging its new tip into your working tree, and these files conflict:\n\n{}\n\nThe target's side is these commits (keep their intent):\n\n```\n{}\n```\n\nYour side is the task above (keep its intent too). Resolve every conflict, leave no conflict markers, and make the check pass; nightshift commits the merge.\n",
            c.paths.lines().map(|p| format!("- {p}")).collect::<Vec<_>>().join("\n"),
            c.target_log.trim_end()
        ));
    }
    if let Some(n) = input.nudge {
        text.push_str(&format!(
            "\n## You went silent\n\nThe previous session of this iteration produced no output and no activity for too long and was ended (nudge {n}). Your changes so far are still in the working tree. Continue the task and finish it; avoid commands that wait for input or run without end.\n"
        ));
    }
    if let Some(feedback) = input.feedback {
        text.push_str(
            "\n## The check failed after the previous iteration\n\nIts output (the last part) is below and in the file named by NIGHTSHIFT_FEEDBACK_FILE. Your earlier changes are still in the working tree.\n\n```\n",
        );
        text.push_str(feedback.trim_end());
        text.push_str("\n```\n");
    }
    text
}

/// An operator's message (`nightshift tell`) not yet given to a session.
pub(super) struct Told {
    pub who: String,
    pub at: String,
    pub text: String,
}

/// The messages told to `item` in `run_id` that no session's prompt carried yet (all of them
/// before its first session), less those a live session took (`operator_message_delivered`):
/// what the next session's prompt carries, and the journal position they were read up to
/// (the session journals it as `told_through`, so a message told between this read and its
/// `session_started` is the next session's, never lost). Read from the journal, so a message is
/// delivered once, live or in a prompt, crash or not.
pub(super) fn told(
    store: &crate::store::Store,
    run_id: &str,
    item: &str,
) -> Result<(Vec<Told>, i64), crate::store::StoreError> {
    use crate::store::EventKind;
    let mut pending: Vec<(i64, Told)> = Vec::new();
    let events = store.item_events(
        run_id,
        item,
        &[
            "operator_message",
            "session_started",
            "operator_message_delivered",
        ],
    )?;
    // Taken live by a session (`operator_message_delivered`): not told again.
    let live: std::collections::BTreeSet<i64> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::OperatorMessageDelivered {
                item: i,
                message_seq,
                ..
            } if i == item => Some(*message_seq),
            _ => None,
        })
        .collect();
    let through = events.iter().map(|e| e.seq).max().unwrap_or(0);
    for event in events {
        match event.kind {
            _ if live.contains(&event.seq) => {}
            EventKind::SessionStarted {
                item: ref i,
                told_through,
                ..
            } if i == item => match told_through {
                Some(t) => pending.retain(|(seq, _)| *seq > t),
                None => pending.clear(),
            },
            EventKind::OperatorMessage {
                item: ref i,
                who,
                text,
            } if i == item => pending.push((
                event.seq,
                Told {
                    who,
                    at: event.at,
                    text,
                },
            )),
            _ => {}
        }
    }
    Ok((pending.into_iter().map(|(_, t)| t).collect(), through))
}

/// The prompt section for operator messages (empty when there are none).
pub(super) fn operator_note(told: &[Told]) -> String {
    if told.is_empty() {
        return String::new();
    }
    let mut text = String::from(
        "\n## From the operator\n\nA person watching this run sent you these messages while you worked (oldest first). Take them into account; they do not change the check.\n\n",
    );
    for t in told {
        text.push_str(&format!("- {} at {}: {}\n", t.who, t.at, t.text.trim()));
    }
    text
}

/// One operator message for a live session, as the dispatcher read it from the journal: its
/// position (what the session reports back on delivery), who sent it, when, and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LiveTold {
    pub seq: i64,
    pub who: String,
    pub at: String,
    pub text: String,
}

/// A live session's input (a CLI that reads messages on stdin): the prompt, then each
/// operator message the dispatcher sends down (`dispatch::SessionRequest::Tell`), encoded for
/// the CLI on the session's tick. The session's task never reads the store: the loop alone
/// owns it (issue 14). A session run on the loop's own thread (a review) has no sender, so it
/// gets the prompt and nothing more; what is told meanwhile reaches the item's next session.
pub(super) struct LiveTell {
    adapter: &'static dyn crate::agent::Adapter,
    opening: Vec<u8>,
    rx: std::sync::mpsc::Receiver<LiveTold>,
}

impl LiveTell {
    /// The input, and the sender the dispatcher sends the item's messages down.
    pub(super) fn new(
        adapter: &'static dyn crate::agent::Adapter,
        prompt: &str,
    ) -> (LiveTell, std::sync::mpsc::Sender<LiveTold>) {
        let (tx, rx) = std::sync::mpsc::channel();
        (
            LiveTell {
                adapter,
                opening: adapter.encode_input(prompt).unwrap_or_default(),
                rx,
            },
            tx,
        )
    }
}

/// An operator's message as a live session is given it.
pub(super) fn live_note(who: &str, at: &str, text: &str) -> String {
    format!(
        "Message from the operator ({who}, at {at}), sent with `nightshift tell` while you work. Take it into account; it does not change the check:\n\n{}",
        text.trim()
    )
}

impl crate::session::LiveInput for LiveTell {
    fn opening(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.opening)
    }

    fn poll(&mut self) -> Vec<crate::session::LiveMessage> {
        self.rx
            .try_iter()
            .filter_map(|told| {
                let note = live_note(&told.who, &told.at, &told.text);
                let bytes = self.adapter.encode_input(&note)?;
                Some(crate::session::LiveMessage {
                    id: told.seq,
                    text: note,
                    bytes,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::LiveInput;

    fn told(seq: i64, text: &str) -> LiveTold {
        LiveTold {
            seq,
            who: "alice".into(),
            at: "2026-12-03T03:00:00Z".into(),
            text: text.into(),
        }
    }

    fn message(text: &str) -> crate::store::EventKind {
        crate::store::EventKind::OperatorMessage {
            item: "a".into(),
            who: "alice".into(),
            text: text.into(),
        }
    }

    fn session(told_through: Option<i64>) -> crate::store::EventKind {
        crate::store::EventKind::SessionStarted {
            item: "a".into(),
            attempt: 1,
            iteration: 1,
            log: "l".into(),
            agent_session: None,
            resumed: false,
            agent: None,
            told_through,
        }
    }

    /// A message told between a prompt's read of the journal and its session's start is the
    /// next session's (or its live input's), never taken as given: the session journals how far
    /// its prompt read. A journal without that position keeps the old rule.
    #[test]
    fn a_message_told_while_a_session_starts_is_the_next_ones_never_lost() {
        use crate::store::{EventKind, PlannedItem, Store};
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let mut store =
            Store::open(&dir.path().join("state.db")).unwrap_or_else(|e| panic!("open: {e}"));
        let mut record = |kind: EventKind| {
            store
                .record("r1", "t", kind)
                .unwrap_or_else(|e| panic!("record: {e}"))
                .seq
        };
        record(EventKind::RunStarted {
            target: "main".into(),
            base: "b0".into(),
            max_iterations: 2,
            max_attempts: 1,
            items: vec![PlannedItem {
                id: "a".into(),
                prompt: "p".into(),
                check: None,
                shipped_by: None,
            }],
        });
        record(message("first"));
        let (first, through) =
            super::told(&store, "r1", "a").unwrap_or_else(|e| panic!("told: {e}"));
        assert_eq!(
            first.iter().map(|t| t.text.as_str()).collect::<Vec<_>>(),
            ["first"]
        );
        // `tell` writes before the session's start is journaled.
        store
            .record("r1", "t", message("second"))
            .unwrap_or_else(|e| panic!("record: {e}"));
        store
            .record("r1", "t", session(Some(through)))
            .unwrap_or_else(|e| panic!("record: {e}"));
        let (next, _) = super::told(&store, "r1", "a").unwrap_or_else(|e| panic!("told: {e}"));
        assert_eq!(
            next.iter().map(|t| t.text.as_str()).collect::<Vec<_>>(),
            ["second"],
            "the message the first prompt did not read goes in the next"
        );
        // An older journal's session start (no position) took everything before it.
        store
            .record("r1", "t", session(None))
            .unwrap_or_else(|e| panic!("record: {e}"));
        let (after_old, _) = super::told(&store, "r1", "a").unwrap_or_else(|e| panic!("told: {e}"));
        assert!(after_old.is_empty());
    }

    /// A live session's input gets the prompt first, then exactly what the dispatcher sent
    /// down, in order, each once; it reads nothing else (no store of its own).
    #[test]
    fn a_live_input_gives_the_prompt_then_what_was_sent_down_once_each() {
        let adapter = crate::agent::adapter_for(crate::config::AgentKind::Claude);
        let (mut input, tx) = LiveTell::new(adapter, "the prompt");
        assert_eq!(input.opening(), adapter.encode_input("the prompt").unwrap());
        assert!(input.opening().is_empty(), "the opening is given once");
        assert!(input.poll().is_empty(), "nothing sent: nothing to write");
        tx.send(told(41, "use the blue one")).unwrap();
        tx.send(told(44, "and keep it small")).unwrap();
        let messages = input.poll();
        let ids: Vec<i64> = messages.iter().map(|m| m.id).collect();
        assert_eq!(ids, [41, 44]);
        assert!(
            messages[0]
                .text
                .contains("(alice, at 2026-12-03T03:00:00Z)")
        );
        assert!(messages[0].text.ends_with("use the blue one"));
        assert_eq!(
            messages[1].bytes,
            adapter.encode_input(&messages[1].text).unwrap()
        );
        assert!(input.poll().is_empty(), "each message is written once");
        // The loop went away (a session on the loop's own thread has no sender): quiet.
        drop(tx);
        assert!(input.poll().is_empty());
    }
}
