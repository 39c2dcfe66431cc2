//! What the model's updates asked of the outside world, kept as the main
//! loop would carry it out: `update` returns its effects, and the tests
//! read the ops asked for, the quit, the suspend and the clipboard here.
//! Each test runs on its own thread, so each has its own record.

use claimtop::dashboard::testing::{Action, App, Effects};
use claimtop::dashboard::testing::{Op, Verb};
use claimtop::events::service::Request;
use std::cell::RefCell;

thread_local! {
    static ASKED: RefCell<Effects> = RefCell::new(Effects::default());
}

/// [`claimtop::dashboard::testing::update`], recording what it asked.
pub fn update(app: &mut App, action: Action) -> Effects {
    let fx = claimtop::dashboard::testing::update(app, action);
    ASKED.with(|a| a.borrow_mut().absorb(fx.clone()));
    fx
}

/// What the ops asked for since the last [`take_ops`] do, oldest first.
pub fn ops() -> Vec<Verb> {
    routed().into_iter().map(|op| op.verb).collect()
}

/// The ops asked for since the last [`take_ops`], each with the origin it
/// goes to, oldest first.
pub fn routed() -> Vec<Op> {
    ASKED.with(|a| a.borrow().ops.clone())
}

/// The ops asked for, handed to the worker (forgotten here).
pub fn take_ops() -> Vec<Op> {
    ASKED.with(|a| std::mem::take(&mut a.borrow_mut().ops))
}

/// Some update asked to quit.
pub fn quit() -> bool {
    ASKED.with(|a| a.borrow().quit)
}

/// Some update asked to suspend.
pub fn suspended() -> bool {
    ASKED.with(|a| a.borrow().suspend)
}

/// The last text asked onto the clipboard.
pub fn clipboard() -> Option<String> {
    ASKED.with(|a| a.borrow().clipboard.clone())
}

/// The events service's requests asked for, oldest first.
pub fn asked_log() -> Vec<Request> {
    ASKED.with(|a| a.borrow().log.clone())
}

/// The latest request to the events service, taken.
pub fn pop_log() -> Option<Request> {
    ASKED.with(|a| a.borrow_mut().log.pop())
}

/// Forget the requests to the events service asked so far.
pub fn clear_log() {
    ASKED.with(|a| a.borrow_mut().log.clear())
}

/// Forget everything asked: a test starting a second dashboard.
pub fn forget() {
    ASKED.with(|a| *a.borrow_mut() = Effects::default())
}
