//! The waits before a send: the loop asks the run's gate (`gate::Gate::ask`: a
//! Retry-After the records shared, the origin's hold and pacing, the retry budget) until
//! it says go, saying each wait as the gate words it and sleeping it out interruptibly. A
//! stop ends the run in the decision's words (`policy::decision::stopped`).

use crate::gate::Ticket;
use crate::policy::decision::{self, Verdict};
use crate::policy::gate::{Clear, Why};
use crate::request::attempt::Loop;
use rand::Rng;

impl<'a> Loop<'a> {
    /// Waits until the gate clears `t` (see `Gate::ask`); `Err`: the run ends instead, with
    /// this stop (the deadline, a signal, a wait past the deadline, the budget spent), and
    /// the send is abandoned with the ticket (`after_not_ready`: the last answer was not
    /// ready, which the deadline's stop says).
    pub(super) fn through_gate(
        &self,
        t: &mut Ticket<'a>,
        after_not_ready: bool,
        rng: &mut dyn Rng,
    ) -> Result<(), Verdict> {
        loop {
            if self.deadline_passed() {
                return Err(decision::deadline_between(after_not_ready));
            }
            let (wait, why) = match self
                .gate
                .ask(t, (self.clock.now(), self.deadline_left()), rng)
            {
                Clear::Go => return Ok(()),
                Clear::Stop(stop) => return Err(decision::stopped(stop)),
                Clear::Wait { wait, why } => (wait, why),
            };
            let (lines, countdown) = match why {
                Why::Held(line) => (line, format!("requests to {} held", t.origin)),
                Why::Pacing(line) => (Some(line), "pacing".to_string()),
                Why::Shared { line, .. } => (line, "Retry-After shared by the runs".into()),
                Why::Room => (None, String::new()),
            };
            lines.iter().for_each(|l| self.reporter.info(l));
            if let Some(sig) = self.sleep_visibly(wait, &countdown) {
                return Err(decision::signalled(sig.outcome()));
            }
        }
    }
}
