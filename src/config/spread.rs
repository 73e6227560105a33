//! Work on each word of a long URL list spread over the machine's cores: a list of 20,000
//! URLs is parsed and its secrets marked before the first request (nothing may be sent
//! while a later URL could still be refused), and on one core that was a sixth of such a
//! batch's time against a server on loopback. A short list, and a single URL, stay on the
//! calling thread.

use std::num::NonZeroUsize;
use std::thread;

/// Lists shorter than this are worked through on the calling thread (starting threads
/// would cost more than they save).
const SPREAD_FROM: usize = 512;

/// How many words are taken from the list at a time: the words in hand are held as
/// references, so a list of a million URLs is not copied whole.
const ROUND: usize = 32_768;

/// `f` of each word of `words`, in order, or the first error in the list's order with the
/// word's place (from 0). Long lists are cut into rounds, each round's words shared out in
/// order over up to one thread a core; a thread that cannot be started leaves its share to
/// the calling thread. `f` must not depend on the order in which words are worked on.
pub(super) fn each<'a, T, E, F>(
    words: impl Iterator<Item = &'a str>,
    n: usize,
    f: F,
) -> Result<Vec<T>, (usize, E)>
where
    T: Send,
    E: Send,
    F: Fn(&'a str) -> Result<T, E> + Sync,
{
    // Made to its length: a list of many URLs is not grown by doubling.
    let mut out = Vec::with_capacity(n);
    if n < SPREAD_FROM {
        for (i, w) in words.enumerate() {
            out.push(f(w).map_err(|e| (i, e))?);
        }
        return Ok(out);
    }
    let cores = thread::available_parallelism().map_or(1, NonZeroUsize::get);
    let mut words = words.peekable();
    let mut round: Vec<&'a str> = Vec::with_capacity(ROUND.min(n));
    while words.peek().is_some() {
        round.clear();
        round.extend(words.by_ref().take(ROUND));
        for r in shared_out(&round, cores, &f) {
            let at = out.len();
            out.push(r.map_err(|e| (at, e))?);
        }
    }
    Ok(out)
}

/// `f` of each of `round`, in order, over up to `cores` threads.
fn shared_out<'a, T, F>(round: &[&'a str], cores: usize, f: &F) -> Vec<T>
where
    T: Send,
    F: Fn(&'a str) -> T + Sync,
{
    let share = round.len().div_ceil(cores.max(1)).max(1);
    thread::scope(|s| {
        let mut parts = round.chunks(share);
        let first = parts.next().unwrap_or_default();
        let started: Vec<_> = parts
            .map(|part| {
                let work = move || part.iter().map(|&w| f(w)).collect::<Vec<T>>();
                thread::Builder::new()
                    .spawn_scoped(s, work)
                    .map_err(|_| part)
            })
            .collect();
        let mut out: Vec<T> = first.iter().map(|&w| f(w)).collect();
        for handle in started {
            match handle {
                Ok(h) => match h.join() {
                    Ok(done) => out.extend(done),
                    Err(panic) => std::panic::resume_unwind(panic),
                },
                Err(part) => out.extend(part.iter().map(|&w| f(w))),
            }
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every word once, in the list's order, whatever the length (around the thresholds).
    #[test]
    fn results_come_back_in_order_at_every_length() {
        for n in [0, 1, SPREAD_FROM - 1, SPREAD_FROM, ROUND + 3, 2 * ROUND + 1] {
            let words: Vec<String> = (0..n).map(|i| i.to_string()).collect();
            let got = each(words.iter().map(String::as_str), n, |w| w.parse::<usize>());
            assert_eq!(got.ok(), Some((0..n).collect::<Vec<_>>()), "{n}");
        }
    }

    /// The error is the first bad word in the list's order, with its place.
    #[test]
    fn the_first_error_in_order_is_the_one_told() {
        for n in [5, SPREAD_FROM + 7, ROUND + 9] {
            let words: Vec<String> = (0..n)
                .map(|i| {
                    if i == 3 || i == n - 2 {
                        "x".into()
                    } else {
                        i.to_string()
                    }
                })
                .collect();
            let got = each(words.iter().map(String::as_str), n, |w| w.parse::<usize>());
            assert_eq!(got.err().map(|(i, _)| i), Some(3), "{n}");
        }
    }

    #[test]
    fn the_shares_cover_a_round_for_any_count_of_cores() {
        let words: Vec<String> = (0..10).map(|i| i.to_string()).collect();
        let refs: Vec<&str> = words.iter().map(String::as_str).collect();
        for cores in [0, 1, 3, 10, 64] {
            assert_eq!(shared_out(&refs, cores, &|w: &str| w.len()).len(), 10);
        }
    }
}
