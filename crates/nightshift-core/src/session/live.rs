//! A live session's stdin: for a CLI that reads its input as a stream of messages while it works
//! (Claude's `--input-format stream-json`). The opening message (the prompt) is written at
//! spawn; messages an operator sends while the session runs are written as they come; each is
//! reported delivered when the CLI echoes it back (it took it); stdin is closed after the
//! CLI's final result, so the CLI exits. Writes go through a task, so a CLI that does not read
//! its stdin can never block the session's `select!`.

use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use super::SessionEvent;
use super::imp::RESULT_GRACE;

/// Where a live session's messages come from (the engine: the opening prompt, then the
/// operator's messages journaled for the item while the session runs).
pub trait LiveInput: Send {
    /// The opening message (the prompt), encoded for the CLI's stdin.
    fn opening(&mut self) -> Vec<u8>;
    /// Messages to write now; polled on the session's tick while its stdin is open.
    fn poll(&mut self) -> Vec<LiveMessage>;
}

/// One message for a live session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveMessage {
    /// The caller's id for it, reported back in [`SessionEvent::InputDelivered`].
    pub id: i64,
    /// The text the CLI echoes when it takes the message.
    pub text: String,
    /// What is written to stdin.
    pub bytes: Vec<u8>,
}

pub(super) struct LiveStdin {
    input: Box<dyn LiveInput>,
    tx: Option<UnboundedSender<Vec<u8>>>,
    /// Written, not yet echoed: (id, text).
    pending: Vec<(i64, String)>,
    /// A final result came while messages were pending (the CLI will answer them in a turn of
    /// their own): since when, on the boot clock.
    waiting: Option<Duration>,
}

impl LiveStdin {
    /// Starts the writer and writes the opening message.
    pub(super) fn start(mut input: Box<dyn LiveInput>, stdin: ChildStdin) -> LiveStdin {
        let (tx, mut rx) = unbounded_channel::<Vec<u8>>();
        tokio::spawn(async move {
            let mut stdin = stdin;
            while let Some(bytes) = rx.recv().await {
                // A CLI that exited closed its end: nothing more to deliver.
                if stdin.write_all(&bytes).await.is_err() || stdin.flush().await.is_err() {
                    break;
                }
            }
            // Dropping `stdin` closes the pipe: the CLI sees the end of its input.
        });
        let _ = tx.send(input.opening());
        LiveStdin {
            input,
            tx: Some(tx),
            pending: Vec::new(),
            waiting: None,
        }
    }

    /// Writes the messages that came since the last poll (none once stdin is closed).
    pub(super) fn poll(&mut self, on_event: &mut dyn FnMut(SessionEvent)) {
        let Some(tx) = &self.tx else { return };
        for m in self.input.poll() {
            if tx.send(m.bytes).is_ok() {
                on_event(SessionEvent::InputWritten { id: m.id });
                self.pending.push((m.id, m.text));
            }
        }
    }

    /// The CLI echoed these messages: each one matched is delivered.
    pub(super) fn accepted(&mut self, texts: Vec<String>, on_event: &mut dyn FnMut(SessionEvent)) {
        for text in texts {
            let text = text.trim();
            if let Some(i) = self.pending.iter().position(|(_, t)| t.trim() == text) {
                let (id, _) = self.pending.remove(i);
                self.waiting = None;
                on_event(SessionEvent::InputDelivered { id });
            }
        }
    }

    /// The CLI printed its final result: whether the session is over (stdin is then closed).
    /// Not while a message it has not taken yet is pending: it answers that in a turn of its
    /// own, with a result of its own.
    pub(super) fn on_result(&mut self, now: Duration) -> bool {
        if self.pending.is_empty() {
            self.close();
            return true;
        }
        self.waiting.get_or_insert(now);
        false
    }

    /// On the tick: whether a wait for pending messages is over (the CLI did not take them
    /// within the grace after its result); stdin is then closed and the session is over.
    pub(super) fn gave_up(&mut self, now: Duration) -> bool {
        match self.waiting {
            Some(since) if now.saturating_sub(since) >= RESULT_GRACE => {
                self.close();
                true
            }
            _ => false,
        }
    }

    fn close(&mut self) {
        self.tx = None;
        self.waiting = None;
    }
}
