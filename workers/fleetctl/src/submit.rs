//! `fleetctl submit FILE`: what an agent does, from the command line.

use std::path::Path;

use fleet_broker::{BrokerConfig, Publisher, Queue};

pub async fn run(broker: &BrokerConfig, file: &Path) -> anyhow::Result<()> {
    // Refuse locally what prepare would dead-letter: the person at the terminal learns why now.
    let (bytes, intent) = crate::hash::read_intent(file)?;
    let publisher = Publisher::connect(broker).await?;
    publisher.publish(Queue::IntentsPrepare, &bytes).await?;
    println!("submitted {} {}", intent.operation_id, intent.payload_hash);
    publisher.close().await;
    Ok(())
}
