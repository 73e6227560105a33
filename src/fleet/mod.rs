//! Beyond one call: the circuit breaker and the retry budget shared by the runs of a
//! fleet through `--state` (`state`: the decisions and the file they live in;
//! `admission`: a run's side, asking before the first attempt and before each retry and
//! recording how the run ended), and `simulate`, which runs a fleet of clients on the
//! same policy code against a model server.

pub mod admission;
pub mod simulate;
pub mod state;
