//! Each scripted user's connections, per origin: at most `POOLS_PER_USER` origins a user, the least
//! recently used one's closing, as a python-requests Session keeps its hosts' pools.

use crate::http::h1::H1Conn;
use crate::http::h2::H2Conn;
use rustc_hash::FxHashMap as HashMap;
use std::rc::Rc;

/// The origins a user keeps connections to: the least recently used one's connections close when
/// an eleventh is used, as a python-requests Session keeps 10 hosts' pools (urllib3's PoolManager).
/// A chain of redirects through new hosts would otherwise leave a user an idle connection on each.
pub(super) const POOLS_PER_USER: usize = 10;

/// A user's connection to one origin.
pub(super) enum Pooled {
    H1(Vec<H1Conn>),
    H2(Rc<H2Conn>),
}

/// Each user's connections, per (origin index, insecure), the most recently used last; at most
/// `POOLS_PER_USER` origins a user.
#[derive(Default)]
pub(super) struct Pools {
    pub(super) users: HashMap<u64, Vec<(PoolKey, Pooled)>>,
}

/// An origin's index, and whether its connections verify no certificate.
pub(super) type PoolKey = (usize, bool);

impl Pools {
    /// The user's connections to the origin, now its most recently used, made with `make` if there
    /// were none, evicting the least recently used origin's past `POOLS_PER_USER`.
    pub(super) fn get_or_insert(
        &mut self,
        (user, origin, insecure): (u64, usize, bool),
        make: impl FnOnce() -> Pooled,
    ) -> &mut Pooled {
        let pools = self.users.entry(user).or_default();
        match pools.iter().position(|(k, _)| *k == (origin, insecure)) {
            Some(i) => pools[i..].rotate_left(1),
            None => {
                if pools.len() >= POOLS_PER_USER {
                    pools.remove(0);
                }
                pools.push(((origin, insecure), make()));
            }
        }
        &mut pools.last_mut().expect("just found or added").1
    }

    /// An idle HTTP/1.1 connection back among the user's connections to the origin.
    pub(super) fn give_back(&mut self, key: (u64, usize, bool), conn: H1Conn) {
        if let Pooled::H1(idle) = self.get_or_insert(key, || Pooled::H1(Vec::new())) {
            idle.push(conn);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 26: a user going through many origins (redirects to a new host each) keeps connections
    /// to the 10 it used last, not to every one.
    #[test]
    fn a_user_keeps_the_pools_of_its_10_latest_origins() {
        let mut pools = Pools::default();
        let idle = || Pooled::H1(Vec::new());
        for origin in 0..25 {
            pools.get_or_insert((7, origin, false), idle);
            pools.get_or_insert((7, 0, false), idle); // origin 0 is used all along
        }
        pools.get_or_insert((8, 3, false), idle);
        let kept: Vec<usize> = pools.users[&7].iter().map(|((o, _), _)| *o).collect();
        assert_eq!(kept, [16, 17, 18, 19, 20, 21, 22, 23, 24, 0]);
        assert_eq!(pools.users[&8].iter().map(|(k, _)| *k).collect::<Vec<_>>(), [(3, false)]);
        pools.get_or_insert((7, 0, true), idle);
        let kept: Vec<PoolKey> = pools.users[&7].iter().map(|(k, _)| *k).collect();
        assert_eq!(kept[8..], [(0, false), (0, true)], "an insecure request's connections are its own");
        assert_eq!(kept[0], (17, false), "the eleventh origin evicted the least recently used");
    }
}
