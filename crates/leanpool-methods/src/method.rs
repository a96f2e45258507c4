//! What a method that runs on a warm worker is to the pool: [`PoolMethod`]
//! (how its params become a queued input, what it answers for a refused
//! text or a time-out, what it runs on the worker) and [`Input`] (the text
//! that is screened and keys the worker). The pool's entry
//! (`leanpool_pool::Pool::call`), its queue and its slots are generic over
//! this trait; each method's impl is in its own module ([`crate::check`],
//! [`crate::verify`], [`crate::normalize`], [`crate::opt`]): adding a pool
//! method is its protocol type (`leanpool_protocol::method`) plus one
//! module here. The opening step every pool method shares (screen the
//! text once, which builds the document and its import header, the
//! worker's key) is [`open`].

use leanpool_lean::{Worker, WorkerError};
use leanpool_protocol::method;
use leanpool_protocol::{CheckParams, LeanParams, RequestOptions, StatementParams};
use leanpool_screen::{Screened, Screening};
use std::future::Future;
use std::ops::Deref;
use std::time::Duration;

/// A method the pool runs on a warm worker of the request's import header.
/// Each queued request carries the reply channel of its own method's
/// result type, so a slot cannot answer a `check` with an `opt` result:
/// there is no such value to send.
pub trait PoolMethod: method::Method + Sized + 'static {
    /// What a slot runs: the params, plus what the pool derived from them.
    type Input: Input;
    /// The queued input for `params`, or the answer when the params alone
    /// decide it (a `verify` whose parts do not assemble is `rejected`).
    fn prepare(params: Self::Params) -> Result<Self::Input, Self::Result>;
    /// The answer for a text the guard refused.
    fn rejected(reason: &str) -> Self::Result;
    /// The answer for a request that ran past its limit.
    fn timed_out(limit_ms: u64) -> Self::Result;
    /// Whether `result` is a time-out answer.
    fn is_timeout(result: &Self::Result) -> bool;
    /// Records the request's whole time in leanpool (queue wait, retries)
    /// in `result`, for inputs that asked for timings ([`RequestOptions::timings`]).
    fn stamp_elapsed(_result: &mut Self::Result, _elapsed: Duration) {}
    /// Runs the request on `worker` (whose header is the request's key).
    /// The worker elaborates `screened` (the input's text as the guard
    /// screened it, once, in `Pool::call`), never the input's text as such.
    /// `policy` is the pool's configured one (`[guard]`, `[verdict]`), the
    /// one `screened` passed: any text the method screens again on its own
    /// (`equiv`'s later attempts) is screened under it too.
    fn run(
        worker: &mut Worker,
        input: &Self::Input,
        screened: &Screened,
        default_timeout: Duration,
        policy: &crate::Policy,
    ) -> impl Future<Output = Result<Self::Result, WorkerError>> + Send;
}

/// A request after the opening step ([`open`]): its input and the input's
/// text as the guard screened it (the document, and its import header: the
/// key of the workers that may run it).
pub struct Opened<M: PoolMethod> {
    /// What a slot runs.
    pub input: M::Input,
    /// `input`'s text, screened once.
    pub screened: Box<Screened>,
}

impl<M: PoolMethod> Opened<M> {
    /// The canonical import header whose workers run the request.
    pub fn header(&self) -> &str {
        self.screened.header()
    }
}

/// The opening step every pool method shares: the guard reads the input's
/// text once ([`leanpool_screen::screen`], under `screening`), which also
/// builds the document and its import header. A refused text is answered
/// here, `M::rejected` with the guard's reason, without a worker. Blocking
/// and linear in the text: the pool runs it off the async runtime.
pub fn open<M: PoolMethod>(
    input: M::Input,
    screening: Screening<'_>,
) -> Result<Opened<M>, M::Result> {
    match leanpool_screen::screen(input.text(), screening) {
        Ok(screened) => Ok(Opened {
            input,
            screened: Box::new(screened),
        }),
        Err(reason) => Err(M::rejected(&reason.to_string())),
    }
}

/// What a queued request holds: the text that is screened and whose
/// header keys the worker, and the request's options (its own time limit,
/// to read and to clamp, and whether it asked for timings), read from its
/// params' one [`RequestOptions`]. Two impls serve every pool method:
/// params that are their own text ([`OwnText`]: `check`, `normalize`,
/// `opt`), and a pair of params and the text derived from them (`verify`'s
/// assembled theorem, `equiv`'s first attempt).
pub trait Input: Send + Sync + 'static {
    /// The text that is screened and whose header keys the worker.
    fn text(&self) -> &str;
    /// The request's time limit and timings flag.
    fn options(&self) -> &RequestOptions;
    /// The same, to change (the pool clamps the limit).
    fn options_mut(&mut self) -> &mut RequestOptions;
}

/// Params whose own text is what is screened and keys the worker.
pub trait OwnText: LeanParams + Send + Sync + 'static {
    /// That text.
    fn own_text(&self) -> &str;
}

impl OwnText for CheckParams {
    fn own_text(&self) -> &str {
        &self.text
    }
}

impl OwnText for StatementParams {
    fn own_text(&self) -> &str {
        &self.text
    }
}

impl<P: OwnText> Input for P {
    fn text(&self) -> &str {
        self.own_text()
    }
    fn options(&self) -> &RequestOptions {
        LeanParams::options(self)
    }
    fn options_mut(&mut self) -> &mut RequestOptions {
        LeanParams::options_mut(self)
    }
}

/// Params and the text derived from them (what is screened and keys the
/// worker).
impl<P, T> Input for (P, T)
where
    P: LeanParams + Send + Sync + 'static,
    T: Deref<Target: AsRef<str>> + Send + Sync + 'static,
{
    fn text(&self) -> &str {
        (*self.1).as_ref()
    }
    fn options(&self) -> &RequestOptions {
        self.0.options()
    }
    fn options_mut(&mut self) -> &mut RequestOptions {
        self.0.options_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leanpool_protocol::{CheckStatus, OptResult};

    #[test]
    fn timeout_answers_keep_the_method_shape() {
        let o: OptResult = method::Opt::timed_out(5);
        assert_eq!(o.check.status, CheckStatus::Timeout);
        assert!(method::Opt::is_timeout(&o));
        assert!(!method::Opt::is_timeout(&method::Opt::rejected("no")));
        assert_eq!(method::Check::rejected("no").reason.as_deref(), Some("no"));
        let mut c = method::Check::timed_out(7);
        method::Check::stamp_elapsed(&mut c, Duration::from_millis(12));
        assert_eq!(c.elapsed_ms, Some(12));
    }

    /// The opening step screens once: an accepted text gets its canonical
    /// header (the worker's key), a refused one the method's `rejected`
    /// answer with the guard's reason.
    #[test]
    fn open_screens_and_keys_by_header() {
        let guard = leanpool_screen::GuardPolicy::default();
        let text = "import Init\n-- note\ntheorem t : True := trivial\n";
        let opened = open::<method::Check>(CheckParams::new(text), (&guard).into())
            .ok()
            .unwrap();
        assert_eq!(opened.header(), leanpool_screen::header_key(text));
        assert_eq!(opened.input.text, text);
        let refused = open::<method::Check>(CheckParams::new("#eval 1\n"), (&guard).into())
            .err()
            .unwrap();
        assert_eq!(refused.status, CheckStatus::Rejected);
        let refused = open::<method::Opt>(StatementParams::new("#eval 1\n"), (&guard).into())
            .err()
            .unwrap();
        assert_eq!(refused.check.status, CheckStatus::Rejected);
    }
}
