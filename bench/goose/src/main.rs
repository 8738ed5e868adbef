//! The Goose side of bench/script_bench.py: bench/locustfiles' users in Rust. One scenario, one
//! transaction (`GET /`), the think time from GOOSE_WAIT ("LOW,HIGH" seconds, uniform as Locust's
//! `between`; "0,0" is `constant(0)`). Goose's own command line sets the users, hatch rate, run time
//! and host; the last line printed is the number of requests made.
use goose::prelude::*;
use std::time::Duration;

async fn index(user: &mut GooseUser) -> TransactionResult {
    let _response = user.get("/").await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), GooseError> {
    let wait = std::env::var("GOOSE_WAIT").unwrap_or_else(|_| "0,0".into());
    let (low, high) = wait.split_once(',').expect("GOOSE_WAIT is LOW,HIGH");
    let low = Duration::from_secs_f64(low.parse().expect("a number of seconds"));
    let high = Duration::from_secs_f64(high.parse().expect("a number of seconds"));
    let mut scenario = scenario!("Bench").register_transaction(transaction!(index));
    if !high.is_zero() {
        scenario = scenario.set_wait_time(low, high)?;
    }
    let metrics = GooseAttack::initialize()?.register_scenario(scenario).execute().await?;
    let requests: usize = metrics.requests.values().map(|r| r.success_count + r.fail_count).sum();
    println!("{requests}");
    Ok(())
}
