//! Driving the app as an operator does, and reading what it shows: keys,
//! typed text, the selection, the status line, the rendered screen.

use super::*;

pub fn key(c: char) -> Action {
    Action::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

pub fn code(c: KeyCode) -> Action {
    Action::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

pub fn ctrl(c: char) -> Action {
    Action::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

pub fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        update(app, key(c));
    }
}

/// Select the row whose key is `k`.
pub fn select(app: &mut App, k: &str) {
    let i = app
        .table
        .rows
        .iter()
        .position(|p| app.claims.live.get(p).is_some_and(|s| s.key == k))
        .unwrap_or_else(|| panic!("no row for {k}"));
    app.table.selected = i;
    claimtop::dashboard::testing::scroll_into_view(app);
    // As a key moving the selection does: the shown claim is worded.
    app.refresh_selected_why();
}

/// What the status line says now.
pub fn said(app: &App) -> String {
    app.status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default()
}

pub fn selected_key(app: &App) -> String {
    app.selected_status()
        .map(|s| s.key.clone())
        .unwrap_or_default()
}

pub fn row_keys(app: &App) -> Vec<String> {
    app.table
        .rows
        .iter()
        .filter_map(|p| app.shown().get(p))
        .map(|s| s.key.clone())
        .collect()
}

/// Draw `app` headless and return the buffer as text, one line per row.
/// The first line of `screen` holding `text` ("" when none does, so the
/// assertion that follows names what it looked for).
pub fn line_with<'a>(screen: &'a str, text: &str) -> &'a str {
    screen
        .lines()
        .find(|l| l.contains(text))
        .unwrap_or_default()
}

pub fn render(app: &App) -> String {
    let buf = render_buffer(app);
    let area = buf.area;
    let mut out = String::new();
    for y in 0..area.height {
        let mut line = String::new();
        for x in 0..area.width {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

pub fn render_buffer(app: &App) -> ratatui::buffer::Buffer {
    let (w, h) = app.size;
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    term.draw(|f| claimtop::dashboard::testing::draw(f, app))
        .expect("draw");
    term.backend().buffer().clone()
}
