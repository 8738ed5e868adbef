//! `squall-target [PORT]`: the built-in demo target alone in its own process, so that a benchmark can
//! pin it to a core of its own (bench/ws_bench.py runs it under `taskset`). Prints the port it listens
//! on (PORT 0 or none: a free one), then serves on 127.0.0.1 until killed.

fn main() {
    let port = match std::env::args().nth(1) {
        Some(p) => p.parse().unwrap_or_else(|_| {
            eprintln!("usage: squall-target [PORT]");
            std::process::exit(2)
        }),
        None => 0,
    };
    let target = squall_target::DemoTarget::start(port).unwrap_or_else(|e| {
        eprintln!("squall-target: cannot listen on 127.0.0.1:{port}: {e}");
        std::process::exit(1)
    });
    println!("{}", target.addr.port());
    loop {
        std::thread::park();
    }
}
