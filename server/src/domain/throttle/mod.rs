//! Brute-force protection for password and one-time-code checks, as the mature identity services do it (Auth0's
//! brute-force protection and suspicious-IP throttling): failures are counted over a window against four keys.
//!
//! - a username from one address: locked after [`PAIR_LOCK_AFTER`] failures, so guessing one account from one
//!   place stops, while the same user logging in from anywhere else is not blocked;
//! - an address, whatever the usernames: a generous lock ([`ADDR_LOCK_AFTER`]) against one source trying many
//!   accounts (an office behind one NAT stays well below it), slowed down well before;
//! - a username, whatever the addresses: slowed down, never locked, so that an attack spread over many addresses
//!   gains little and cannot lock the real user out (anyone may type a username);
//! - the one-time codes of an account, whatever the addresses: locked after [`CODE_LOCK_AFTER`] wrong codes, so
//!   that many addresses cannot guess the second factor. Only a wrong code with the right password counts, so
//!   only someone who has the password can bring this lock about; it holds back code checks (attempts that
//!   carry a code), not the password alone.
//!
//! An attempt is reserved *before* the credentials are checked ([`reserve`] decides and counts it
//! as pending in one step), so parallel attempts cannot get past a limit: while the failures and the pending
//! attempts of a key reach its lock, further attempts wait for the pending ones to be settled (rather than
//! being refused: a script's parallel requests with the right password go through), and are refused once the
//! failures alone reach it. A settled attempt is a failure, released when it was not a guess, or — only for a
//! complete login — clears the username's failures. A waiting attempt sleeps until an attempt of one of its keys
//! is settled in this process ([`Waits`]); only when none of its keys has an attempt pending in this process
//! (they are other replicas') does it ask the store again on a back-off that doubles up to [`MAX_BACKOFF`], with a
//! read that takes no write lock.
//!
//! [`policy`] is the policy, pure: the limits, what is stored of a key, and the decision from the counts, which
//! the [`Store`](crate::store::Store) applies in the one transaction that decides and counts (in the database,
//! so that every replica of the server counts against the same limits and a restart forgets nothing).
//! `waits` reserves attempts through the store and holds back the ones that must wait. A reservation that is
//! never settled (its request was cancelled, or its replica died) stops counting after [`PENDING_TTL_MS`].

pub mod policy;
mod waits;

pub use policy::*;
pub use waits::{MAX_BACKOFF, Verdict, Waits, reserve};
