//! Admission of clones and fetches to the git workers, shared fairly between clients. git
//! does not retry a 503, so a fetch does not take the crawler pages' short queue deadline:
//! fetches wait their turn here, at most a fixed number at once go on to the workers (where
//! they run ahead of queued pages of their class, see
//! [`super::scheduler::Scheduler::run_first`]), and only a fetch that finds too many waiting,
//! or waits too long, is refused.
//!
//! The share: a freed slot goes to the waiting fetch whose client (the opaque key of its
//! address's /24 or /56) holds the fewest slots, the oldest among equals; and when the waiting
//! line is full, a newcomer from a lighter client takes the place of the heaviest client's
//! newest waiter. So one CI farm cloning in a loop has every slot while it is alone, and a
//! single slot's wait when anyone else comes.

use super::scheduler::{Shed, ShedReason};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::oneshot;

/// How long a refused fetch is told to wait before it tries again.
const RETRY: Duration = Duration::from_secs(10);

/// The gate: `slots` fetches at once, up to `max_waiting` more waiting up to `patience`.
pub(super) struct FetchGate {
    line: Arc<Mutex<Line>>,
    max_waiting: usize,
    patience: Duration,
}

/// The slots in use, by client, and the fetches waiting for one.
struct Line {
    free: usize,
    held: HashMap<u64, usize>,
    waiting: VecDeque<Waiting>,
    next_ticket: u64,
}

struct Waiting {
    client: u64,
    ticket: u64,
    reply: oneshot::Sender<Result<(), ShedReason>>,
}

/// A slot held by one fetch until it is dropped.
pub(super) struct FetchSlot {
    line: Arc<Mutex<Line>>,
    client: u64,
}

impl FetchGate {
    pub(super) fn new(slots: usize, max_waiting: usize, patience: Duration) -> FetchGate {
        let line = Line {
            free: slots.max(1),
            held: HashMap::new(),
            waiting: VecDeque::new(),
            next_ticket: 0,
        };
        FetchGate {
            line: Arc::new(Mutex::new(line)),
            max_waiting,
            patience,
        }
    }

    /// Waits for a slot for `client`'s fetch; the fetch holds it until the slot is dropped.
    pub(super) async fn enter(&self, client: u64) -> Result<FetchSlot, Shed> {
        let (ticket, granted) = {
            let mut line = lock(&self.line);
            if line.free > 0 && line.waiting.is_empty() {
                line.take(client);
                return Ok(self.slot(client));
            }
            if line.waiting.len() >= self.max_waiting && !line.make_room_for(client) {
                return Err(refused(ShedReason::QueueFull));
            }
            let (reply, granted) = oneshot::channel();
            let ticket = line.next_ticket;
            line.next_ticket += 1;
            line.waiting.push_back(Waiting {
                client,
                ticket,
                reply,
            });
            (ticket, granted)
        };
        let mut waited = Waited {
            line: &self.line,
            ticket,
            client,
            granted,
            answered: false,
        };
        let answer = tokio::time::timeout(self.patience, &mut waited.granted).await;
        waited.answered = matches!(answer, Ok(Ok(_)));
        match answer {
            Ok(Ok(Ok(()))) => Ok(self.slot(client)),
            Ok(Ok(Err(reason))) => Err(refused(reason)),
            Ok(Err(_)) => Err(refused(ShedReason::ShuttingDown)),
            Err(_) => Err(refused(ShedReason::Deadline)),
        }
    }

    fn slot(&self, client: u64) -> FetchSlot {
        FetchSlot {
            line: Arc::clone(&self.line),
            client,
        }
    }
}

impl Line {
    fn take(&mut self, client: u64) {
        self.free -= 1;
        *self.held.entry(client).or_default() += 1;
    }

    /// Gives a slot back and hands it on.
    fn release(&mut self, client: u64) {
        self.give_back(client);
        self.grant();
    }

    fn give_back(&mut self, client: u64) {
        if let Some(n) = self.held.get_mut(&client) {
            *n -= 1;
            if *n == 0 {
                self.held.remove(&client);
            }
        }
        self.free += 1;
    }

    /// Hands free slots to the waiters of the clients holding the fewest, oldest first.
    fn grant(&mut self) {
        while self.free > 0 {
            let held = |client: &u64| self.held.get(client).copied().unwrap_or(0);
            let Some(next) = (0..self.waiting.len()).min_by_key(|&i| held(&self.waiting[i].client))
            else {
                return;
            };
            let Some(waiter) = self.waiting.remove(next) else {
                return;
            };
            self.take(waiter.client);
            if waiter.reply.send(Ok(())).is_err() {
                // The waiter went away as it was granted: the loop grants the slot again.
                self.give_back(waiter.client);
            }
        }
    }

    /// With the line full: refuses the newest waiter of the client with the most fetches
    /// (held and waiting), if that is more than `client` would have with this one.
    fn make_room_for(&mut self, client: u64) -> bool {
        let mut load: HashMap<u64, usize> = self.held.clone();
        for waiter in &self.waiting {
            *load.entry(waiter.client).or_default() += 1;
        }
        let mine = load.get(&client).copied().unwrap_or(0) + 1;
        let Some((&heaviest, &most)) = load.iter().max_by_key(|(_, n)| **n) else {
            return false;
        };
        if heaviest == client || most <= mine {
            return false;
        }
        let Some(newest) = self.waiting.iter().rposition(|w| w.client == heaviest) else {
            return false;
        };
        if let Some(waiter) = self.waiting.remove(newest) {
            let _ = waiter.reply.send(Err(ShedReason::OverShare));
        }
        true
    }
}

impl Drop for FetchSlot {
    fn drop(&mut self) {
        lock(&self.line).release(self.client);
    }
}

/// A place in the line, given up if the fetch stops waiting (timed out, or went away).
struct Waited<'a> {
    line: &'a Mutex<Line>,
    ticket: u64,
    client: u64,
    granted: oneshot::Receiver<Result<(), ShedReason>>,
    /// Whether the gate answered (a slot or a refusal), so there is nothing to give up.
    answered: bool,
}

impl Drop for Waited<'_> {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        let mut line = lock(self.line);
        if let Some(i) = line.waiting.iter().position(|w| w.ticket == self.ticket) {
            line.waiting.remove(i);
        } else if let Ok(Ok(())) = self.granted.try_recv() {
            // Granted while the wait ended: the slot goes to the next in line.
            line.release(self.client);
        }
    }
}

fn lock(line: &Mutex<Line>) -> MutexGuard<'_, Line> {
    line.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn refused(reason: ShedReason) -> Shed {
    Shed {
        reason,
        retry_after: RETRY,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(gate: &FetchGate) -> usize {
        lock(&gate.line).waiting.len()
    }

    async fn until_waiting(gate: &FetchGate, n: usize) {
        while waiting(gate) < n {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn fetches_past_the_slots_wait_and_past_the_waiters_are_refused() {
        let gate = Arc::new(FetchGate::new(1, 1, Duration::from_secs(30)));
        let first = gate.enter(1).await.unwrap();
        let waiter = tokio::spawn({
            let gate = Arc::clone(&gate);
            async move { gate.enter(1).await.map(drop) }
        });
        until_waiting(&gate, 1).await;
        let third = gate.enter(1).await.err().unwrap();
        assert_eq!(third.reason, ShedReason::QueueFull);
        drop(first);
        waiter.await.unwrap().unwrap();
        assert_eq!(waiting(&gate), 0);
        assert_eq!(lock(&gate.line).free, 1);
    }

    #[tokio::test]
    async fn a_fetch_that_waits_too_long_is_refused_and_leaves_the_line() {
        let gate = FetchGate::new(1, 4, Duration::from_millis(20));
        let _first = gate.enter(1).await.unwrap();
        let late = gate.enter(2).await.err().unwrap();
        assert_eq!(late.reason, ShedReason::Deadline);
        assert_eq!(late.retry_after_secs(), 10);
        assert_eq!(waiting(&gate), 0);
    }

    #[tokio::test]
    async fn a_freed_slot_goes_to_the_client_holding_fewest() {
        let gate = Arc::new(FetchGate::new(2, 8, Duration::from_secs(30)));
        let heavy_a = gate.enter(1).await.unwrap();
        let _heavy_b = gate.enter(1).await.unwrap();
        let (order, mut order_rx) = tokio::sync::mpsc::unbounded_channel();
        for (n, client) in [1, 1, 2].into_iter().enumerate() {
            let (shared, order) = (Arc::clone(&gate), order.clone());
            tokio::spawn(async move {
                let _slot = shared.enter(client).await.unwrap();
                order.send(client).unwrap();
                std::future::pending::<()>().await;
            });
            until_waiting(&gate, n + 1).await;
        }
        drop(heavy_a);
        assert_eq!(order_rx.recv().await, Some(2), "the light client first");
        assert_eq!(waiting(&gate), 2);
    }

    #[tokio::test]
    async fn a_light_client_takes_a_heavy_clients_place_in_a_full_line() {
        let gate = Arc::new(FetchGate::new(1, 2, Duration::from_secs(30)));
        let _running = gate.enter(1).await.unwrap();
        let mut heavy = Vec::new();
        for n in 1..=2 {
            let shared = Arc::clone(&gate);
            heavy.push(tokio::spawn(async move { shared.enter(1).await.map(drop) }));
            until_waiting(&gate, n).await;
        }
        let light = tokio::spawn({
            let gate = Arc::clone(&gate);
            async move { gate.enter(2).await.map(drop) }
        });
        let shed = heavy.pop().unwrap().await.unwrap().err().unwrap();
        assert_eq!(shed.reason, ShedReason::OverShare);
        assert_eq!(waiting(&gate), 2);
        let again = gate.enter(1).await.err().unwrap();
        assert_eq!(
            again.reason,
            ShedReason::QueueFull,
            "the heavy client is still heaviest"
        );
        drop(light);
    }

    #[tokio::test]
    async fn a_waiter_that_goes_away_leaves_the_line() {
        let gate = Arc::new(FetchGate::new(1, 4, Duration::from_secs(30)));
        let first = gate.enter(1).await.unwrap();
        let gone = tokio::spawn({
            let gate = Arc::clone(&gate);
            async move { gate.enter(2).await.map(drop) }
        });
        until_waiting(&gate, 1).await;
        gone.abort();
        let _ = gone.await;
        drop(first);
        let again = gate.enter(3).await.unwrap();
        assert_eq!(lock(&gate.line).free, 0);
        drop(again);
        assert_eq!(lock(&gate.line).free, 1);
    }
}
