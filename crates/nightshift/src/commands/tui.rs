//! `nightshift tui`: the run at a glance in a full-screen terminal (ratatui + crossterm), over
//! SSH too. The run and its items with their phases, the selected item's live session rendered
//! as `attach` renders it, usage gauges against the run's caps, alerts (ATTENTION) and pauses
//! with their reasons, and — once the run is over — the morning review queue of the report.
//!
//! Every action is the CLI's own command, run as a child process (`pause`, `resume`, `stop`,
//! `stop --graceful`, the queue entry's `confirm`/`accept`/`restore`/`explain`, `report --html`):
//! the TUI only reads the store (read-only, a fresh snapshot per tick) and never holds the lock.
//! It redraws at most three times a second.
//!
//! `--print-frame WxH` (hidden) draws one frame into ratatui's test backend and prints it: what
//! the snapshot tests pin.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nightshift_core::config;
use nightshift_core::report::morning::Action;
use nightshift_core::store::{AttemptRow, EventKind, ItemRow, ItemState, RunRow, Store};
use nightshift_core::workspace::Workspace;
use ratatui::Terminal;
use ratatui::backend::{Backend, TestBackend};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Gauge, List, ListItem, ListState, Paragraph, Wrap};

use crate::CommandResult;
use crate::cli::TuiArgs;
use crate::error::CommandError;
use nightshift_core::halt::ExitClass;

/// A tick: the snapshot is read again and the screen redrawn at most this often.
const TICK: Duration = Duration::from_millis(333);
/// Lines of the live stream kept.
const STREAM_LINES: usize = 200;

/// What one frame shows, read from the store (and the logs, ATTENTION, the report).
pub struct View {
    pub run: Option<RunRow>,
    pub items: Vec<ItemRow>,
    pub attempts: Vec<AttemptRow>,
    /// The selected item's latest session, rendered.
    pub stream: Vec<String>,
    pub alerts: Vec<String>,
    pub caps: (Option<u64>, Option<f64>),
    pub pause_asked: bool,
    /// The morning review queue (the report's needs-you list), once the run is over.
    pub queue: Vec<Action>,
}

/// The TUI's own state.
#[derive(Default)]
pub struct Ui {
    pub selected: usize,
    pub status: String,
}

pub fn run(args: &TuiArgs) -> CommandResult {
    let ws = super::workspace(&args.repo)?;
    if let Some(size) = &args.print_frame {
        let (w, h) = size
            .split_once('x')
            .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)))
            .ok_or_else(|| {
                CommandError::new(
                    ExitClass::Invariant,
                    format!("--print-frame `{size}`: expected WIDTHxHEIGHT, e.g. 100x30"),
                )
            })?;
        let view = snapshot(&ws, 0)?;
        let mut terminal = Terminal::new(TestBackend::new(w, h)).map_err(io)?;
        terminal
            .draw(|f| draw(f, &view, &Ui::default()))
            .map_err(io)?;
        print!("{}", frame_text(terminal.backend()));
        return Ok(0);
    }
    let mut terminal = ratatui::try_init().map_err(io)?;
    let result = event_loop(&mut terminal, &ws);
    ratatui::restore();
    result
}

fn io(e: impl std::fmt::Display) -> CommandError {
    CommandError::new(ExitClass::Execution, format!("draw the terminal: {e}"))
}

/// The test backend's cells as plain lines (trailing spaces trimmed).
fn frame_text(backend: &TestBackend) -> String {
    let buffer = backend.buffer();
    let width = buffer.area.width as usize;
    let mut out = String::new();
    for row in buffer.content.chunks(width.max(1)) {
        let line: String = row.iter().map(|c| c.symbol()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn event_loop<B: Backend>(terminal: &mut Terminal<B>, ws: &Workspace) -> CommandResult
where
    B::Error: std::fmt::Display,
{
    let mut ui = Ui::default();
    let mut action: Option<(String, Child)> = None;
    loop {
        let view = snapshot(ws, ui.selected)?;
        if let Some((what, child)) = &mut action
            && let Ok(Some(status)) = child.try_wait()
        {
            let mut text = String::new();
            if let Some(mut out) = child.stdout.take() {
                let _ = std::io::Read::read_to_string(&mut out, &mut text);
            }
            if let Some(mut err) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut err, &mut text);
            }
            ui.status = format!(
                "{what}: {} (exit {})",
                text.lines().last().unwrap_or(""),
                status.code().unwrap_or(-1)
            );
            action = None;
        }
        terminal.draw(|f| draw(f, &view, &ui)).map_err(io)?;
        if !event::poll(TICK).map_err(io)? {
            continue;
        }
        let Event::Key(key) = event::read().map_err(io)? else {
            continue;
        };
        if key.kind != KeyEventKind::Press {
            continue;
        }
        let rows = if view.queue.is_empty() {
            view.items.len()
        } else {
            view.queue.len()
        };
        let args: Option<Vec<String>> = match key.code {
            KeyCode::Char('q') | KeyCode::Esc => return Ok(0),
            KeyCode::Down | KeyCode::Char('j') => {
                ui.selected = (ui.selected + 1).min(rows.saturating_sub(1));
                None
            }
            KeyCode::Up | KeyCode::Char('k') => {
                ui.selected = ui.selected.saturating_sub(1);
                None
            }
            KeyCode::Char('p') => Some(vec!["pause".into()]),
            KeyCode::Char('r') => Some(vec!["resume".into()]),
            KeyCode::Char('s') => Some(vec!["stop".into()]),
            KeyCode::Char('g') => Some(vec!["stop".into(), "--graceful".into()]),
            KeyCode::Char('a') | KeyCode::Enter => view.queue.get(ui.selected).map(|a| {
                a.command
                    .split_whitespace()
                    .skip(1)
                    .map(str::to_owned)
                    .collect()
            }),
            KeyCode::Char('o') => Some(vec![
                "report".into(),
                "--html".into(),
                ws.dir().join("report.html").display().to_string(),
            ]),
            _ => None,
        };
        if let Some(args) = args {
            if action.is_some() {
                ui.status = "an action is still running".into();
                continue;
            }
            let what = format!("nightshift {}", args.join(" "));
            match spawn(ws, &args) {
                Ok(child) => {
                    ui.status = format!("{what}: running");
                    action = Some((what, child));
                }
                Err(e) => ui.status = format!("{what}: could not start: {e}"),
            }
        }
    }
}

/// Runs one of the CLI's own commands in this repository, its output kept for the status line.
fn spawn(ws: &Workspace, args: &[String]) -> std::io::Result<Child> {
    let exe = std::env::current_exe()?;
    Command::new(exe)
        .args(args)
        .arg("-C")
        .arg(ws.root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
}

/// Reads everything one frame shows.
pub fn snapshot(ws: &Workspace, selected: usize) -> Result<View, CommandError> {
    let mut view = View {
        run: None,
        items: Vec::new(),
        attempts: Vec::new(),
        stream: Vec::new(),
        alerts: Vec::new(),
        caps: (None, None),
        pause_asked: nightshift_core::control::pause_requested(ws),
        queue: Vec::new(),
    };
    if let Ok(c) = config::load(&ws.root().join(config::FILE_NAME)) {
        view.caps = (c.budget.run_tokens, c.budget.run_usd);
    }
    view.alerts = std::fs::read_to_string(ws.dir().join("ATTENTION"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect();
    let Some(store) = super::read_store(ws)? else {
        return Ok(view);
    };
    let Some(run) = store.latest_run()? else {
        return Ok(view);
    };
    view.items = store.items(&run.id)?;
    view.attempts = store.attempts(&run.id)?;
    if !run.is_running()
        && let Ok(Some(report)) = super::report::build(ws, &store, Some(&run.id), None)
    {
        view.queue = report.needs_human;
    }
    let item = if view.queue.is_empty() {
        view.items.get(selected).map(|i| i.id.clone())
    } else {
        view.queue.get(selected).map(|a| a.item.clone())
    };
    if let Some(item) = item {
        view.stream = stream(&store, &run.id, &item)?;
    }
    view.run = Some(run);
    Ok(view)
}

/// The item's latest session, as `attach` renders it.
fn stream(store: &Store, run_id: &str, item: &str) -> Result<Vec<String>, CommandError> {
    let latest = store
        .run_events(run_id, &["session_started"])?
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::SessionStarted {
                item: i,
                attempt,
                iteration,
                log,
                ..
            } if i == item => Some((attempt, iteration, PathBuf::from(log))),
            _ => None,
        })
        .next_back();
    let Some((attempt, iteration, log)) = latest else {
        return Ok(vec!["no session yet".into()]);
    };
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let mut lines = vec![format!("{item} attempt {attempt} iteration {iteration}")];
    lines.extend(text.lines().filter_map(super::attach::render_line));
    let skip = lines.len().saturating_sub(STREAM_LINES);
    Ok(lines.split_off(skip))
}

fn state_style(state: ItemState) -> Style {
    match state {
        ItemState::Shipped | ItemState::IntegratedLocal => Style::default().fg(Color::Green),
        ItemState::Parked => Style::default().fg(Color::Red),
        ItemState::Escalated | ItemState::AwaitingOperator => Style::default().fg(Color::Yellow),
        ItemState::Running => Style::default().add_modifier(Modifier::BOLD),
        ItemState::Queued => Style::default(),
    }
}

/// One frame.
pub fn draw(f: &mut ratatui::Frame<'_>, view: &View, ui: &Ui) {
    let [header, body, gauges, alerts, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(6),
        Constraint::Length(2),
        Constraint::Length(4),
        Constraint::Length(1),
    ])
    .areas(f.area());

    let title = match &view.run {
        Some(r) => {
            let mut t = format!(
                "nightshift · run {} onto {} · {} · pass {}",
                r.id, r.target, r.state, r.pass
            );
            if let Some(h) = &r.halt_reason {
                t.push_str(&format!(" · {h}"));
            }
            if let Some(reason) = &r.pause_reason {
                t.push_str(&format!(" · PAUSED: {reason}"));
            } else if view.pause_asked && r.is_running() {
                t.push_str(" · pause asked");
            }
            t
        }
        None => "nightshift · no run has started here".into(),
    };
    f.render_widget(
        Paragraph::new(title).style(Style::default().add_modifier(Modifier::BOLD)),
        header,
    );

    let [left, right] =
        Layout::horizontal([Constraint::Percentage(42), Constraint::Percentage(58)]).areas(body);
    if view.queue.is_empty() {
        let rows: Vec<ListItem<'_>> = view
            .items
            .iter()
            .map(|i| {
                let phase = i
                    .current_attempt
                    .and_then(|n| {
                        view.attempts
                            .iter()
                            .find(|a| a.item == i.id && a.attempt == n)
                    })
                    .map(|a| format!(" a{} {} i{}", a.attempt, a.phase, a.iteration))
                    .unwrap_or_default();
                ListItem::new(Line::from(vec![
                    Span::raw(format!("{:<14} ", i.id)),
                    Span::styled(i.state.to_string(), state_style(i.state)),
                    Span::raw(phase),
                ]))
            })
            .collect();
        let mut state = ListState::default().with_selected(Some(ui.selected));
        f.render_stateful_widget(
            List::new(rows)
                .block(Block::default().borders(Borders::ALL).title(" items "))
                .highlight_symbol("▶ "),
            left,
            &mut state,
        );
    } else {
        let rows: Vec<ListItem<'_>> = view
            .queue
            .iter()
            .map(|a| {
                ListItem::new(vec![
                    Line::from(vec![
                        Span::styled(
                            format!("{} ", a.kind.replace('_', " ")),
                            Style::default().fg(Color::Yellow),
                        ),
                        Span::raw(a.item.clone()),
                    ]),
                    Line::from(format!("  {}", a.command)),
                ])
            })
            .collect();
        let mut state = ListState::default().with_selected(Some(ui.selected));
        f.render_stateful_widget(
            List::new(rows)
                .block(
                    Block::default()
                        .borders(Borders::ALL)
                        .title(" morning review (a: act, o: report) "),
                )
                .highlight_symbol("▶ "),
            left,
            &mut state,
        );
    }
    let height = right.height.saturating_sub(2) as usize;
    let shown: Vec<Line<'_>> = view
        .stream
        .iter()
        .skip(view.stream.len().saturating_sub(height))
        .map(|l| Line::from(l.as_str()))
        .collect();
    f.render_widget(
        Paragraph::new(shown)
            .wrap(Wrap { trim: false })
            .block(Block::default().borders(Borders::ALL).title(" session ")),
        right,
    );

    let [tokens, usd] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(gauges);
    let spent = view
        .run
        .as_ref()
        .map_or((0.0, 0.0), |r| (r.spent_tokens, r.spent_usd));
    gauge(
        f,
        tokens,
        "tokens",
        spent.0,
        view.caps.0.map(|c| c as f64),
        super::report::thousands,
    );
    gauge(f, usd, "USD (est.)", spent.1, view.caps.1, |v| {
        format!("${v:.2}")
    });

    let alert_lines: Vec<Line<'_>> = if view.alerts.is_empty() {
        vec![Line::from("none")]
    } else {
        view.alerts
            .iter()
            .rev()
            .take(alerts.height.saturating_sub(2) as usize)
            .map(|a| Line::from(a.as_str()))
            .collect()
    };
    f.render_widget(
        Paragraph::new(alert_lines)
            .style(Style::default().fg(Color::Red))
            .block(Block::default().borders(Borders::ALL).title(" alerts ")),
        alerts,
    );
    let keys =
        "q quit · ↑↓ select · p pause · r resume · s stop · g graceful stop · a act · o report";
    let footer_text = if ui.status.is_empty() {
        keys.to_owned()
    } else {
        format!("{} │ {keys}", ui.status)
    };
    f.render_widget(Paragraph::new(footer_text), footer);
}

fn gauge(
    f: &mut ratatui::Frame<'_>,
    area: ratatui::layout::Rect,
    name: &str,
    spent: f64,
    cap: Option<f64>,
    fmt: impl Fn(f64) -> String,
) {
    let (ratio, label) = match cap {
        Some(c) if c > 0.0 => (
            (spent / c).clamp(0.0, 1.0),
            format!("{name}: {} of {}", fmt(spent), fmt(c)),
        ),
        _ => (0.0, format!("{name}: {} (no cap)", fmt(spent))),
    };
    f.render_widget(
        Gauge::default()
            .ratio(ratio)
            .label(label)
            .gauge_style(Style::default().fg(Color::Blue)),
        area,
    );
}
