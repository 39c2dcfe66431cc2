//! The terminal: raw mode and the alternate screen in, and always back out —
//! on quit, on error, on panic and on SIGTERM / SIGHUP.

use super::action::Action;
use super::keys::is_interrupt;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::cursor::{Hide, Show};
use ratatui::crossterm::event::{
    self, DisableMouseCapture, EnableMouseCapture, Event, KeyEventKind, MouseEventKind,
};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, Clear, ClearType, EnterAlternateScreen, LeaveAlternateScreen,
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
        if let Err(e) = execute!(out, EnterAlternateScreen, Hide, EnableMouseCapture) {
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
        execute!(
            io::stdout(),
            EnterAlternateScreen,
            Hide,
            EnableMouseCapture,
            Clear(ClearType::All)
        )?;
        // Forget what was drawn so the next frame is drawn whole. Not
        // `Terminal::clear`: it asks the terminal for the cursor position,
        // and the input thread would swallow the answer.
        self.term.swap_buffers();
        self.term.swap_buffers();
        Ok(())
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
    let _ = execute!(
        io::stdout(),
        DisableMouseCapture,
        LeaveAlternateScreen,
        Show
    );
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
                // Stamped here, where it was pressed: the model's clock
                // moves only once a second.
                Ok(Event::Key(k)) if k.kind != KeyEventKind::Release && is_interrupt(&k) => {
                    Action::Interrupt(crate::claims::now_ms())
                }
                Ok(Event::Key(k)) if k.kind != KeyEventKind::Release => Action::Key(k),
                Ok(Event::Resize(w, h)) => Action::Resize(w, h),
                // Clicks and the wheel; pointer motion would only flood.
                Ok(Event::Mouse(m))
                    if !matches!(m.kind, MouseEventKind::Moved | MouseEventKind::Drag(_)) =>
                {
                    Action::Mouse(m)
                }
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

/// Put `text` on the terminal's clipboard with OSC 52: the terminal (or
/// tmux, with set-clipboard on) does the copy, so it works over ssh.
pub fn osc52(text: &str) -> io::Result<()> {
    use std::io::Write;
    let mut out = io::stdout();
    write!(out, "\x1b]52;c;{}\x07", base64(text.as_bytes()))?;
    out.flush()
}

/// Standard base64 with padding (RFC 4648), all OSC 52 needs.
pub fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(ABC[((n >> shift) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_matches_the_rfc_vectors() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(super::base64(plain.as_bytes()), coded);
        }
    }
}
