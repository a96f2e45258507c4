//! In-flight deduplication: concurrent identical requests share one Lean
//! run.
//!
//! The first request for a key is the *leader*: it runs and, if its answer
//! is storable, stores it and hands the stored bytes to every *follower*
//! that joined meanwhile. A follower is given only such an answer; when the
//! leader ends without one (a `timeout`, an error, its caller gone and its
//! future dropped), followers are told nothing and run their own request
//! (their time limits may differ, and an error may be the leader's alone).

use crate::key::Key;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

type Slot = watch::Receiver<Option<Arc<Vec<u8>>>>;

/// The requests running now, by key.
#[derive(Default)]
pub struct Flights {
    running: Mutex<HashMap<Key, (u64, Slot)>>,
    next_id: Mutex<u64>,
}

/// What a request is for its key.
pub enum Role {
    /// Runs; must [`Leader::finish`] (or be dropped).
    Leader(Leader),
    /// Waits for the leader's stored answer.
    Follower(Slot),
}

/// The running request of a key; dropping it ends the flight.
pub struct Leader {
    flights: Arc<Flights>,
    key: Key,
    id: u64,
    tx: watch::Sender<Option<Arc<Vec<u8>>>>,
}

impl Flights {
    /// Joins the flight of `key`, or starts it.
    pub fn join(self: &Arc<Self>, key: Key) -> Role {
        let mut running = self.running.lock().unwrap();
        if let Some((_, rx)) = running.get(&key) {
            return Role::Follower(rx.clone());
        }
        let id = {
            let mut n = self.next_id.lock().unwrap();
            *n += 1;
            *n
        };
        let (tx, rx) = watch::channel(None);
        running.insert(key, (id, rx));
        Role::Leader(Leader {
            flights: self.clone(),
            key,
            id,
            tx,
        })
    }

    /// Flights running now.
    pub fn len(&self) -> usize {
        self.running.lock().unwrap().len()
    }

    /// Whether no flight is running.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Leader {
    /// Hands the stored answer to the followers (call after storing it, so
    /// a request arriving after the flight ends finds it in the store).
    pub fn finish(self, stored: Arc<Vec<u8>>) {
        let _ = self.tx.send(Some(stored));
    }
}

impl Drop for Leader {
    fn drop(&mut self) {
        let mut running = self.flights.running.lock().unwrap();
        if running.get(&self.key).is_some_and(|(id, _)| *id == self.id) {
            running.remove(&self.key);
        }
    }
}

/// A follower's wait: the leader's stored answer, or `None` when the
/// leader ended without one.
pub async fn follow(mut slot: Slot) -> Option<Arc<Vec<u8>>> {
    match slot.wait_for(|v| v.is_some()).await {
        Ok(v) => v.clone(),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn followers_get_the_leaders_answer_or_nothing() {
        let f = Arc::new(Flights::default());
        let k = Key([1; 32]);
        let Role::Leader(lead) = f.join(k) else {
            panic!("first is the leader")
        };
        let Role::Follower(a) = f.join(k) else {
            panic!("second follows")
        };
        let wait = tokio::spawn(follow(a));
        lead.finish(Arc::new(b"x".to_vec()));
        assert_eq!(wait.await.unwrap().unwrap().as_slice(), b"x");
        assert!(f.is_empty());
        // A leader dropped without an answer releases its followers empty.
        let Role::Leader(lead) = f.join(k) else {
            panic!()
        };
        let Role::Follower(b) = f.join(k) else {
            panic!()
        };
        drop(lead);
        assert!(follow(b).await.is_none());
        assert!(matches!(f.join(k), Role::Leader(_)));
    }
}
