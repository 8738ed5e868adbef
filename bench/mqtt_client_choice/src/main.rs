//! usage: mqtt-client-choice HOST PORT CLIENTS QOS SECONDS PAYLOAD_BYTES
//! Publishes with rumqttc's AsyncClient on one current-thread runtime (as `squall mqtt --threads 1`),
//! one message in flight per client at QoS 1; prints {"published": N, "seconds": S}. A QoS 0 message
//! counts when the event loop has written it (rumqttc has no way to learn the broker read it).

use rumqttc::{AsyncClient, Event, MqttOptions, Outgoing, Packet, QoS};
use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let (host, port, clients, qos, secs, size) = (
        a[1].clone(),
        a[2].parse::<u16>().unwrap(),
        a[3].parse::<usize>().unwrap(),
        a[4].parse::<u8>().unwrap(),
        a[5].parse::<f64>().unwrap(),
        a[6].parse::<usize>().unwrap(),
    );
    let qos = if qos == 0 { QoS::AtMostOnce } else { QoS::AtLeastOnce };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let local = tokio::task::LocalSet::new();
    let published = Rc::new(Cell::new(0u64));
    let start = Instant::now();
    local.block_on(&rt, async {
        for i in 0..clients {
            let mut opts = MqttOptions::new(format!("rumqttc-bench-{i}"), host.clone(), port);
            opts.set_keep_alive(Duration::from_secs(60)).set_inflight(if qos == QoS::AtMostOnce { 100 } else { 1 });
            let (client, mut eventloop) = AsyncClient::new(opts, 100);
            let payload = vec![b'x'; size];
            let topic = format!("bench/rumqttc-{i}");
            tokio::task::spawn_local(async move {
                while client.publish(topic.as_str(), qos, false, payload.clone()).await.is_ok() {}
            });
            let published = published.clone();
            tokio::task::spawn_local(async move {
                while let Ok(event) = eventloop.poll().await {
                    match event {
                        Event::Incoming(Packet::PubAck(_)) => published.set(published.get() + 1),
                        Event::Outgoing(Outgoing::Publish(_)) if qos == QoS::AtMostOnce => published.set(published.get() + 1),
                        _ => {}
                    }
                }
            });
        }
        tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    });
    println!("{{\"published\": {}, \"seconds\": {}}}", published.get(), start.elapsed().as_secs_f64());
    std::process::exit(0);
}
