//! The terminal: raw mode and the alternate screen in, and always back out —
//! on quit, on error, on panic and on SIGTERM / SIGHUP.

use super::action::Action;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::cursor::{Hide, Show};
use ratatui::crossterm::event::{self, Event, KeyEventKind};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::Terminal;
use std::io::{self, Stdout};
use std::sync::mpsc::Sender;
use std::sync::Once;

pub type Term = Terminal<CrosstermBackend<Stdout>>;

/// Owns the screen: dropping it restores the terminal, so every return path
/// (including `?`) leaves a clean shell.
pub struct Screen {
    pub term: Term,
}

impl Screen {
    pub fn enter() -> io::Result<Screen> {
        install_panic_hook();
        enable_raw_mode()?;
        let mut out = io::stdout();
        if let Err(e) = execute!(out, EnterAlternateScreen, Hide) {
            restore();
            return Err(e);
        }
        match Terminal::new(CrosstermBackend::new(out)) {
            Ok(term) => Ok(Screen { term }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

impl Screen {
    /// Ctrl-Z: hand the terminal back, stop like any job, and take the
    /// screen again (whole) when the shell continues us.
    pub fn suspend(&mut self) -> io::Result<()> {
        restore();
        // SAFETY: raise only sends a signal to this process; SIGTSTP's
        // default action stops it until SIGCONT, then raise returns.
        unsafe {
            libc::raise(libc::SIGTSTP);
        }
        enable_raw_mode()?;
        execute!(io::stdout(), EnterAlternateScreen, Hide)?;
        self.term.clear()
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}

/// Put the terminal back (idempotent; errors ignored: there is nowhere left
/// to report them).
pub fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(io::stdout(), LeaveAlternateScreen, Show);
}

/// A panic restores the terminal before the message prints, or the message
/// lands on the alternate screen and vanishes with it.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}

/// SIGTERM, SIGHUP and an external SIGINT become a normal quit, so the main
/// loop restores the terminal on its way out.
pub fn spawn_signals(out: Sender<Action>) -> io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGHUP, SIGINT])?;
    std::thread::Builder::new()
        .name("claimtop-signals".into())
        .spawn(move || {
            if signals.forever().next().is_some() {
                let _ = out.send(Action::Quit);
            }
        })?;
    Ok(())
}

/// Read keys and resizes until the UI hangs up.
pub fn spawn_input(out: Sender<Action>) -> io::Result<()> {
    std::thread::Builder::new()
        .name("claimtop-input".into())
        .spawn(move || loop {
            let action = match event::read() {
                Ok(Event::Key(k)) if k.kind != KeyEventKind::Release => Action::Key(k),
                Ok(Event::Resize(w, h)) => Action::Resize(w, h),
                Ok(_) => continue,
                Err(e) => {
                    let _ = out.send(Action::Warning(format!("terminal input failed: {e}")));
                    let _ = out.send(Action::Quit);
                    return;
                }
            };
            if out.send(action).is_err() {
                return;
            }
        })?;
    Ok(())
}
