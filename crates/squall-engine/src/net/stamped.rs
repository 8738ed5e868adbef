//! TCP whose reads can tell when the kernel received their bytes (`SO_TIMESTAMPNS`), so that a
//! response read late is still timed when it arrived.
//!
//! Why: a generator that wakes for every response pays a wake-up per request (an `epoll_wait`, a
//! context switch, a pass of the scripted users' hub). Scripted users with think time run far below
//! saturation, where those wake-ups are most of the cost: 10,000 users `between(1, 2)` woke the hub 0.8
//! times a request (161,704 polls for 201,058 requests in 30 s). Reading responses in batches instead
//! times them late by up to the batch's wait, unless each read carries the kernel's own receive time.
//!
//! How: `SO_TIMESTAMPNS` makes TCP's `recvmsg` return, as a control message, the time the last
//! segment it copied was received (software timestamp, `CLOCK_REALTIME`; on loopback it is taken as
//! the peer's send hands the segment over). The stamp is turned into an `Instant` through the two
//! clocks read together: how long ago the kernel received it, subtracted from now.
//!
//! What it costs, measured on a saturated scripted run (50 users `constant(0)`, alternating rounds):
//! reading every response with `recvmsg` took 5% of its requests per CPU-second (92,029-92,862
//! against 95,704-98,613), of which turning stamps on without asking for them took 1-3% (once any
//! socket asks, the kernel stamps every packet it receives). So only the connections of a scripted
//! engine that defers reads stamp (`stamp`, turned on for a connection when it is next used), and only
//! the reads of a thread that asks (`stamp_reads`) use `recvmsg`; the others use plain `read`.
//!
//! The kernel starts stamping a moment after the first socket of the machine asks (a static key
//! flipped from a work queue, `net_enable_timestamp`), so the first reads of a run can come back
//! unstamped: a reader must time those by its own clock, and not rely on stamps until it has seen one.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncRead, Interest, ReadBuf};
use tokio::net::TcpStream;

pub struct Tcp {
    io: TcpStream,
    stamps: bool,
    /// The kernel's receive time of the bytes read last (since `take_received`).
    received: Stamp,
}

/// What the last read said of when its bytes were received.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Stamp {
    /// Not asked (a plain read, or nothing read since `take_received`).
    #[default]
    Unasked,
    /// Asked, and the kernel gave no time: it does not stamp (yet).
    Missing,
    /// Received then, on the monotonic clock.
    At(Instant),
}

thread_local! {
    /// Whether this thread's reads on stamping connections ask for the receive time now.
    static ASK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// From now on, this thread's reads on connections opened with stamps ask the kernel for their
/// receive time (`on`), or read plainly.
pub fn stamp_reads(on: bool) {
    ASK.with(|a| a.set(on));
}

/// The engine's TCP connections open in this process now: one more for each `Tcp` made, one fewer
/// for each dropped. One relaxed atomic add per connection (not per request); a run's loop reads it
/// a few times a second into the time series (`Timeline::set_connections`).
static OPEN: AtomicU64 = AtomicU64::new(0);

/// The engine's connections open now (see `OPEN`).
pub fn open_connections() -> u64 {
    OPEN.load(Ordering::Relaxed)
}

impl Drop for Tcp {
    fn drop(&mut self) {
        OPEN.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Tcp {
    /// A connection whose reads carry no receive time until `stamp`.
    pub fn new(io: TcpStream) -> Tcp {
        OPEN.fetch_add(1, Ordering::Relaxed);
        Tcp { io, stamps: false, received: Stamp::Unasked }
    }

    /// From now on the kernel keeps each read's receive time (a no-op if it does; if it refuses, reads
    /// stay unstamped and the caller times by its own clock).
    pub fn stamp(&mut self) {
        if !self.stamps {
            self.stamps = enable(self.io.as_raw_fd()).is_ok();
        }
    }

    pub fn stamps(&self) -> bool {
        self.stamps
    }

    /// When the bytes read last were received, as far as the read asked (kept).
    pub fn received(&self) -> Stamp {
        self.received
    }

    /// When the bytes read last were received, as far as the read asked; forgets it.
    pub fn take_received(&mut self) -> Stamp {
        std::mem::take(&mut self.received)
    }

    /// Writes what the socket takes now, without waiting (tokio's `try_write`).
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        self.io.try_write(buf)
    }

    /// Ready once bytes (or the end of the stream) can be read; until then `cx` is woken when they
    /// can. Reads nothing.
    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io.poll_read_ready(cx)
    }

    /// A read without waiting, as `poll_read` reads (stamped when this thread asks): WouldBlock when
    /// nothing came, which the reactor says without a system call until the socket's next event.
    pub fn try_read_now(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let room = buf.len();
        let n = if !self.stamps || !ASK.with(|a| a.get()) {
            self.received = Stamp::Unasked;
            self.io.try_read(buf)?
        } else {
            let fd = self.io.as_raw_fd();
            // SAFETY: initialized bytes seen as possibly uninitialized; recvmsg writes only bytes.
            let uninit = unsafe { &mut *(buf as *mut [u8] as *mut [MaybeUninit<u8>]) };
            let (n, stamp) = self.io.try_io(Interest::READABLE, || recv_stamped(fd, uninit))?;
            if n > 0 {
                self.received = stamp.map_or(Stamp::Missing, |t| Stamp::At(to_instant(t)));
            }
            n
        };
        if n > 0 && n < room {
            self.drained(); // (as `poll_read`)
        }
        Ok(n)
    }

    /// The socket is drained: its readiness is forgotten until its next event (see `poll_read`).
    fn drained(&self) {
        let _ = self.io.try_io(Interest::READABLE, || Err::<(), _>(io::ErrorKind::WouldBlock.into()));
    }
}

fn enable(fd: RawFd) -> io::Result<()> {
    let on: libc::c_int = 1;
    let size = std::mem::size_of_val(&on) as libc::socklen_t;
    // SAFETY: `fd` is an open socket and `on` outlives the call.
    let r = unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, (&on as *const i32).cast(), size) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A CLOCK_REALTIME stamp as an `Instant`: now, less how long ago the stamp was. A stamp in the
/// future (the wall clock stepped back) is now.
fn to_instant(t: libc::timespec) -> Instant {
    let (now, wall) = (Instant::now(), SystemTime::now());
    let at = UNIX_EPOCH + Duration::new(t.tv_sec as u64, t.tv_nsec as u32);
    let ago = wall.duration_since(at).unwrap_or_default();
    now.checked_sub(ago).unwrap_or(now)
}

/// One `recvmsg`: the bytes, and the receive time if the kernel gave one.
fn recv_stamped(fd: RawFd, buf: &mut [MaybeUninit<u8>]) -> io::Result<(usize, Option<libc::timespec>)> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // Room for one SCM_TIMESTAMPNS (CMSG_SPACE of a timespec: 32 bytes), 8-byte aligned as cmsghdr is.
    let mut control = [0u64; 8];
    // SAFETY: msghdr is plain data; all-zero is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: `msg` points at `iov` (into `buf`) and `control`, both alive and writable for the call.
    let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: the CMSG_* macros walk the control buffer the kernel filled, within msg_controllen.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                stamp = Some(std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, stamp))
}

impl AsyncRead for Tcp {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        if !me.stamps || !ASK.with(|a| a.get()) {
            me.received = Stamp::Unasked; // no earlier read's time may stand for these bytes
            return Pin::new(&mut me.io).poll_read(cx, buf);
        }
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        let fd = me.io.as_raw_fd();
        loop {
            ready!(me.io.poll_read_ready(cx))?;
            // SAFETY: recvmsg only writes into the unfilled part, and only `n` bytes are marked filled.
            let unfilled = unsafe { buf.unfilled_mut() };
            let room = unfilled.len();
            match me.io.try_io(Interest::READABLE, || recv_stamped(fd, unfilled)) {
                Ok((n, stamp)) => {
                    unsafe { buf.assume_init(n) };
                    buf.advance(n);
                    if n > 0 {
                        // (The end of stream carries no stamp: the last bytes' time stands for it.)
                        me.received = stamp.map_or(Stamp::Missing, |t| Stamp::At(to_instant(t)));
                    }
                    if n > 0 && n < room {
                        // The socket is drained: forget its readiness, as tokio's own reads do after
                        // a read that left room. Kept, it made the next read after the next request's
                        // write a `recvmsg` that found nothing (EAGAIN): 0.34 system calls a request
                        // at 1,000 users `between(0.1, 0.2)` (strace: 11,018 EAGAIN reads for 32,673
                        // requests). Bytes that arrive after this read raise readiness anew (a new
                        // edge, seen by the reactor's next turn), so none waits unseen.
                        me.drained();
                    }
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue, // readiness was stale
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

super::write_through!(Tcp, io);

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    async fn pair(stamps: bool) -> (Tcp, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = Tcp::new(TcpStream::connect(listener.local_addr().unwrap()).await.unwrap());
        if stamps {
            client.stamp();
        }
        (client, listener.accept().await.unwrap().0)
    }

    /// Bytes sent, then read 30 ms later: the stamp is when they arrived, not when they were read.
    #[tokio::test]
    async fn a_late_read_is_stamped_with_the_arrival() {
        let (mut client, mut server) = pair(true).await;
        stamp_reads(true); // (the test's runtime runs on this thread)
        let mut buf = [0u8; 16];
        // Until the kernel stamps at all (see the module's doc: a work queue's turn).
        for _ in 0..1000 {
            server.write_all(b".").await.unwrap();
            assert_eq!(client.read(&mut buf).await.unwrap(), 1);
            if client.take_received() != Stamp::Missing {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let sent = Instant::now();
        server.write_all(b"hello").await.unwrap();
        tokio::time::sleep(Duration::from_millis(30)).await;
        let n = client.read(&mut buf).await.unwrap();
        let read = Instant::now();
        assert_eq!(&buf[..n], b"hello");
        let Stamp::At(arrived) = client.take_received() else { panic!("the kernel stamps loopback segments") };
        // Loopback delivers within the send call; the two clocks are read a few hundred ns apart, and
        // NTP slews the wall clock by at most 500 ppm (15 µs over 30 ms): 1 ms covers both with room.
        let slack = Duration::from_millis(1);
        assert!(arrived + slack >= sent, "stamped {:?} before the send", sent - arrived);
        assert!(arrived <= sent + slack, "stamped {:?} after the send", arrived - sent);
        assert!(read - arrived >= Duration::from_millis(29));
        assert_eq!(client.take_received(), Stamp::Unasked, "taken once");
        // Not asked: a plain read, and no earlier time stands for its bytes.
        server.write_all(b"a").await.unwrap();
        client.read_exact(&mut buf[..1]).await.unwrap();
        stamp_reads(false);
        server.write_all(b"b").await.unwrap();
        client.read_exact(&mut buf[..1]).await.unwrap();
        assert_eq!(client.take_received(), Stamp::Unasked);
        // A body read until the server closes: the end of stream keeps the last bytes' time.
        stamp_reads(true);
        server.write_all(b"tail").await.unwrap();
        client.read_exact(&mut buf[..4]).await.unwrap();
        server.shutdown().await.unwrap();
        assert_eq!(client.read(&mut buf).await.unwrap(), 0);
        assert!(matches!(client.take_received(), Stamp::At(_)), "the end of stream kept the time");
    }

    #[tokio::test]
    async fn a_connection_opened_without_stamps_is_never_stamped() {
        let (mut client, mut server) = pair(false).await;
        stamp_reads(true);
        server.write_all(b"x").await.unwrap();
        let mut buf = [0u8; 4];
        assert_eq!(client.read(&mut buf).await.unwrap(), 1);
        assert_eq!(client.take_received(), Stamp::Unasked);
    }
}
