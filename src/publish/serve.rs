//! Force-release requests from elsewhere, carried out on this host's root.

use super::{Level, Publisher};
use crate::claims::{self, now_ms, ForceOutcome, Root};
use crate::store::drive::Input;
use crate::store::sink::{FleetRequest, Taken};
use crate::store::StoreError;
use serde_json::{json, Value};

impl Publisher {
    /// Carry out the force-release requests waiting under root `i`. Each is
    /// taken first, in one transaction that finds it as the requester put
    /// it: a requester that gave up has withdrawn it (a transaction that
    /// succeeds only while it is untaken), so a withdrawn request is never
    /// carried out and a taken one is always answered.
    pub(super) fn serve_requests(
        &mut self,
        i: usize,
        log: &mut dyn FnMut(Level, &str),
    ) -> Result<(), StoreError> {
        self.send_answers()?;
        let id = self.roots[i].info.id.clone();
        for request in self.sink.requests(&id)? {
            let mut req = match &request.body {
                // Taken by an earlier run of this publisher, which stopped
                // before answering: whether it acted is unknown, so it is
                // not done twice; its requester says so.
                Ok(req) if req.taken.is_some() => continue,
                Ok(req) => req.clone(),
                Err(e) => {
                    let body = json!({"outcome": "error", "error": format!("not a request: {e}")});
                    self.answers.push((request, body.to_string()));
                    self.send_answers()?;
                    continue;
                }
            };
            req.taken = Some(Taken {
                pid: std::process::id(),
                at_ms: now_ms(),
            });
            if !self.sink.take(&request, &req)? {
                continue;
            }
            let answer = answer_to(&self.roots[i].root, &req);
            let outcome = answer["outcome"].as_str().unwrap_or("");
            log(
                Level::Info,
                &format!(
                    "request root={} key={:?} operator={:?} outcome={outcome}",
                    self.roots[i].info.path,
                    req.key,
                    req.operator.as_deref().unwrap_or(""),
                ),
            );
            // Only an archive changed a lockfile; any other key a request
            // names (one too long to be a file, say) is no claim to publish.
            if outcome == "archived" {
                let r = &mut self.roots[i];
                r.drive(Input::Reread(req.key), now_ms());
            }
            self.stats.requests += 1;
            self.answers.push((request, answer.to_string()));
            self.send_answers()?;
        }
        Ok(())
    }

    /// Write the answers owed, each with its request's deletion. Kept until
    /// written: etcd lost between acting and answering, the answer goes out
    /// once it is back.
    fn send_answers(&mut self) -> Result<(), StoreError> {
        while let Some((req, body)) = self.answers.first() {
            self.sink.answer(req, body)?;
            self.answers.remove(0);
        }
        Ok(())
    }
}

/// Carry out one request through the file protocol: the answer is what
/// `force-release --json` would print, plus its words (`"text"`).
fn answer_to(root: &Root, req: &FleetRequest) -> Value {
    match claims::force_release(root, &req.key, &req.force_opts()) {
        Ok(outcome @ ForceOutcome::Archived { .. }) => {
            let text = outcome.describe(&req.key);
            let ForceOutcome::Archived {
                archived_to,
                previous,
                previous_state,
            } = outcome
            else {
                return Value::Null;
            };
            json!({
                "outcome": "archived",
                "archived_to": archived_to.to_string_lossy(),
                "previous": previous,
                "previous_state": previous_state.as_str(),
                "text": text,
            })
        }
        Ok(outcome @ ForceOutcome::Refused(_)) => {
            let text = outcome.describe(&req.key);
            let ForceOutcome::Refused(reason) = outcome else {
                return Value::Null;
            };
            json!({"outcome": "refused", "reason": reason, "text": text})
        }
        Err(e) => json!({"outcome": "error", "error": e.to_string()}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_carried_out_with_its_guard_and_answered_in_force_release_words() {
        let dir = tempfile::tempdir().expect("root");
        let root = Root::with_events_here(dir.path());
        let req = |holder: &str| FleetRequest {
            key: "k".into(),
            expect_holder: Some(holder.into()),
            expect_acquired_at: None,
            operator: Some("ops".into()),
            allow_live: true,
            at_ms: 0,
            taken: None,
        };
        let none = answer_to(&root, &req("w"));
        assert_eq!(none["outcome"], "refused", "{none}");
        let opts = crate::claims::AcquireOpts {
            ttl_ms: Some(3_600_000),
            ..Default::default()
        };
        claims::acquire(&root, "k", "w", &opts).expect("acquire");
        let other = answer_to(&root, &req("someone-else"));
        assert_eq!(other["outcome"], "refused", "{other}");
        assert!(root.lockfile("k").exists());
        let done = answer_to(&root, &req("w"));
        assert_eq!(done["outcome"], "archived", "{done}");
        assert_eq!(done["previous"]["holder"], "w");
        assert!(!root.lockfile("k").exists());
    }
}
