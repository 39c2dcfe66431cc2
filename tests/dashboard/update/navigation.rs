//! Moving about: selection, sort, panes, zoom, the detail record, the mouse.

use super::*;

#[test]
fn default_order_puts_what_needs_a_human_first_then_key() {
    let app = fixed_app(80, 24);
    let states: Vec<ClaimState> = app
        .table
        .rows
        .iter()
        .filter_map(|p| app.shown().get(p))
        .map(|s| s.state)
        .collect();
    let mut sorted = states.clone();
    sorted.sort_by_key(|s| s.severity());
    assert_eq!(states, sorted);
    assert_eq!(states[0], ClaimState::Corrupted);
    assert_eq!(row_keys(&app)[1..3], ["node:beta", "queue/jobs 7"]);
}

#[test]
fn j_k_g_and_shift_g_move_the_selection() {
    let mut app = fixed_app(80, 24);
    assert_eq!(app.table.selected, 0);
    update(&mut app, key('j'));
    update(&mut app, code(KeyCode::Down));
    assert_eq!(app.table.selected, 2);
    update(&mut app, key('k'));
    assert_eq!(app.table.selected, 1);
    update(&mut app, key('G'));
    assert_eq!(app.table.selected, app.table.rows.len() - 1);
    update(&mut app, key('g'));
    assert_eq!(app.table.selected, 0);
    assert!(
        !update(&mut app, key('k')).redraw,
        "nothing above the first row"
    );
}

#[test]
fn s_cycles_the_sort_column_and_shift_s_reverses_it() {
    let mut app = fixed_app(80, 24);
    update(&mut app, key('s'));
    assert_eq!(app.table.sort.column, ColumnId::Key);
    let keys = row_keys(&app);
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    update(&mut app, key('S'));
    assert!(app.table.sort.reverse);
    sorted.reverse();
    assert_eq!(row_keys(&app), sorted);
    // The nine columns of one root's table: back to the state after them.
    for _ in 0..8 {
        update(&mut app, key('s'));
    }
    assert_eq!(app.table.sort.column, ColumnId::State, "s wraps around");
}

#[test]
fn sorting_keeps_the_same_claim_selected() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "gpu:0");
    update(&mut app, key('s'));
    assert_eq!(selected_key(&app), "gpu:0");
}

#[test]
fn tab_cycles_the_panes_and_movement_follows_the_focus() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "build:web");
    let row = app.table.selected;
    update(&mut app, code(KeyCode::Tab));
    assert_eq!(app.focus, Pane::Detail);
    update(&mut app, key('j'));
    assert_eq!(app.table.detail_scroll, 1);
    assert_eq!(app.table.selected, row, "the table selection did not move");
    update(&mut app, code(KeyCode::Tab));
    assert_eq!(app.focus, Pane::Events);
    update(&mut app, code(KeyCode::BackTab));
    assert_eq!(app.focus, Pane::Detail);
}

#[test]
fn z_zooms_the_focused_pane_to_the_whole_screen_and_tab_moves_the_zoom() {
    for (w, h) in [(160, 48), (80, 24)] {
        let mut app = fixed_app(w, h);
        let rows_before = claimtop::dashboard::testing::table_capacity(app.size, app.look());
        update(&mut app, key('z'));
        assert!(app.zoomed);
        let screen = render(&app);
        // The table alone: no events pane title, more rows, the way back named.
        assert!(!screen.contains("following"), "{screen}");
        assert!(screen.contains("z all panes"), "{screen}");
        let rows = claimtop::dashboard::testing::table_capacity(app.size, app.look());
        assert!(rows > rows_before, "{rows} <= {rows_before}");
        // j pages through the zoomed table as through the plain one.
        update(&mut app, key('G'));
        assert_eq!(Some(selected_key(&app)), row_keys(&app).last().cloned());
        update(&mut app, code(KeyCode::Tab));
        update(&mut app, code(KeyCode::Tab));
        let screen = render(&app);
        assert!(
            screen.contains("following"),
            "the events pane, zoomed:\n{screen}"
        );
        update(&mut app, key('z'));
        assert!(!app.zoomed);
        let screen = render(&app);
        assert!(!screen.contains("z all panes"), "{screen}");
    }
}

#[test]
fn the_table_says_where_the_selection_is() {
    let mut app = fixed_app(80, 24);
    update(&mut app, key('j'));
    update(&mut app, key('j'));
    let n = app.table.rows.len();
    assert!(
        render(&app).contains(&format!("claims 3/{n}")),
        "{}",
        render(&app)
    );
}

#[test]
fn enter_opens_the_whole_record_and_y_copies_the_key() {
    let mut app = fixed_app(160, 48);
    select(&mut app, "build:web");
    update(&mut app, code(KeyCode::Enter));
    assert_eq!(app.modes.overlay(), Some(Overlay::Claim));
    let screen = render(&app);
    for want in [
        "record (YAML, as the lockfile holds it)",
        "holder: pty:worker-1",
        "ticket: OPS-17",
        "/srv/work/.fno/claims/build%3Aweb.lock",
        "history (2 events of this key in the tail)",
    ] {
        assert!(screen.contains(want), "{want}:\n{screen}");
    }
    update(&mut app, key('y'));
    assert_eq!(clipboard().as_deref(), Some("build:web"));
    assert!(status_text(&app).contains("copied build:web"));
    update(&mut app, code(KeyCode::Enter));
    assert!(app.modes.overlay().is_none(), "Enter closes it again");
}

fn click(app: &mut App, x: u16, y: u16) -> bool {
    use ratatui::crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
    update(
        app,
        Action::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: x,
            row: y,
            modifiers: KeyModifiers::NONE,
        }),
    )
    .redraw
}

fn wheel(app: &mut App, x: u16, y: u16, down: bool) -> bool {
    use ratatui::crossterm::event::{KeyModifiers, MouseEvent, MouseEventKind};
    let kind = if down {
        MouseEventKind::ScrollDown
    } else {
        MouseEventKind::ScrollUp
    };
    update(
        app,
        Action::Mouse(MouseEvent {
            kind,
            column: x,
            row: y,
            modifiers: KeyModifiers::NONE,
        }),
    )
    .redraw
}

#[test]
fn a_click_selects_a_row_or_a_pane_and_a_title_click_sorts() {
    let mut app = fixed_app(160, 48);
    let screen = render(&app);
    let (y, _) = screen
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("node:alpha"))
        .expect("row");
    assert!(click(&mut app, 20, y as u16));
    assert_eq!(selected_key(&app), "node:alpha");

    let (hy, header) = screen
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("holder") && l.contains("state"))
        .expect("header");
    let hx = header[..header.find("holder").expect("holder")]
        .chars()
        .count() as u16;
    assert!(click(&mut app, hx + 1, hy as u16));
    assert_eq!(app.table.sort.column, ColumnId::Holder);
    assert!(!app.table.sort.reverse);
    click(&mut app, hx + 1, hy as u16);
    assert!(app.table.sort.reverse, "a second click reverses");

    let events_y = screen
        .lines()
        .position(|l| l.starts_with("events"))
        .expect("events pane") as u16;
    assert!(click(&mut app, 5, events_y + 1));
    assert_eq!(app.focus, Pane::Events);
}

#[test]
fn the_wheel_scrolls_what_is_under_the_pointer() {
    let mut app = fixed_app(160, 48);
    select(&mut app, "broken");
    let first = selected_key(&app);
    assert!(wheel(&mut app, 20, 5, true));
    assert_ne!(selected_key(&app), first);
    assert_eq!(app.focus, Pane::Table);
    let mut small = fixed_app(80, 24);
    update(&mut small, key('?'));
    wheel(&mut small, 20, 10, true);
    assert!(
        small.modes.overlay_scroll() > 0,
        "the help scrolls under the wheel"
    );
}
