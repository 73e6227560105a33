//! What stops the exchanges in flight: the HTTP agents of the transports that exist. One
//! run has one; a batch has one per transport its workers keep (see `session::batch`).
//! Shutting an agent down ends its exchange in flight within milliseconds (see
//! `deadline`); an agent added once the list has fired is shut down at once, so a
//! transport built as a signal arrives cannot slip through.

use std::sync::{Arc, Mutex, MutexGuard};

/// The agents to shut down when the run must stop, shared by the session, its watchdog,
/// its signal handler and the batch's workers.
#[derive(Clone, Default)]
pub struct Aborts(Arc<Mutex<List>>);

#[derive(Default)]
struct List {
    /// The list has fired: every agent added from now on is shut down at once.
    fired: bool,
    /// The number the next agent added gets.
    next: u64,
    /// The agents, each with its number (at most one per transport alive).
    agents: Vec<(u64, ureq::Agent)>,
}

/// An agent's place in the list, to take it out when its transport is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket(u64);

impl Aborts {
    /// An empty list.
    pub fn new() -> Aborts {
        Aborts::default()
    }

    fn list(&self) -> MutexGuard<'_, List> {
        // A panic elsewhere while holding it leaves plain data: still usable.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `agent` (shut down at once if the list has fired).
    pub fn add(&self, agent: ureq::Agent) -> Ticket {
        let mut list = self.list();
        if list.fired {
            agent.clone().shutdown();
        }
        let ticket = Ticket(list.next);
        list.next += 1;
        list.agents.push((ticket.0, agent));
        ticket
    }

    /// Takes out the agent `ticket` names (its transport is gone).
    pub fn remove(&self, ticket: Ticket) {
        self.list().agents.retain(|(n, _)| *n != ticket.0);
    }

    /// Shuts every agent down, and every one added later.
    pub fn fire(&self) {
        let agents: Vec<ureq::Agent> = {
            let mut list = self.list();
            list.fired = true;
            list.agents.iter().map(|(_, a)| a.clone()).collect()
        };
        for agent in agents {
            agent.shutdown();
        }
    }

    /// How many agents are in the list.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.list().agents.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_come_and_go_and_a_fired_list_stays_fired() {
        let aborts = Aborts::new();
        let a = aborts.add(ureq::Agent::new_with_defaults());
        let b = aborts.add(ureq::Agent::new_with_defaults());
        assert_ne!(a, b);
        assert_eq!(aborts.len(), 2);
        aborts.remove(a);
        assert_eq!(aborts.len(), 1);
        aborts.fire();
        aborts.add(ureq::Agent::new_with_defaults());
        assert!(aborts.list().fired);
        aborts.remove(b);
        assert_eq!(aborts.len(), 1);
    }
}
