//! The admin server over real HTTP: health, readiness and a Prometheus scrape that shows
//! explicit histogram buckets, build info and process metrics.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fleet_runtime::{install_metrics, metric_names, serve_admin, CancellationToken, Readiness};
use tokio::net::TcpListener;

#[tokio::test]
async fn admin_endpoints_serve_health_readiness_and_metrics() {
    let handle = install_metrics("execute");
    // A second install (another worker in the same process) shares the recorder.
    let again = install_metrics("reconcile");
    let readiness = Readiness::new();
    let broker = Arc::new(AtomicBool::new(false));
    readiness.add_flag("broker", broker.clone());
    readiness.add_async("postgres", Duration::from_secs(1), || async { true });

    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(serve_admin(listener, handle, readiness, shutdown.clone()));
    let http = reqwest::Client::new();

    let livez = http.get(format!("{base}/livez")).send().await.unwrap();
    assert_eq!(livez.status(), 200);

    let not_ready = http.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(not_ready.status(), 503);
    let body = not_ready.text().await.unwrap();
    assert!(
        body.contains("broker") && !body.contains("postgres"),
        "{body}"
    );

    broker.store(true, Ordering::Release);
    let ready = http.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);

    metrics::histogram!(metric_names::PROVIDER_CALL_DURATION_SECONDS, "provider" => "payments", "action" => "payment.create")
        .record(0.042);
    metrics::counter!(metric_names::PROVIDER_CALLS_TOTAL, "provider" => "payments", "action" => "payment.create", "outcome" => "succeeded")
        .increment(1);
    let scrape = http.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(scrape.status(), 200);
    assert!(scrape.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let text = scrape.text().await.unwrap();
    for expected in [
        "# TYPE fleet_provider_call_duration_seconds histogram",
        "fleet_provider_call_duration_seconds_bucket{provider=\"payments\",action=\"payment.create\",le=\"0.05\"} 1",
        "fleet_provider_call_duration_seconds_bucket{provider=\"payments\",action=\"payment.create\",le=\"0.025\"} 0",
        "# HELP fleet_provider_calls_total Provider calls made",
        "fleet_build_info{component=\"execute\",version=\"0.1.0\"} 1",
        "fleet_build_info{component=\"reconcile\",version=\"0.1.0\"} 1",
        // Read by metrics-process at this scrape, under the standard names.
        "# TYPE process_cpu_seconds_total gauge",
        "process_cpu_seconds_total ",
        "process_resident_memory_bytes ",
        "process_virtual_memory_bytes ",
        "process_open_fds ",
        "process_max_fds ",
        "process_threads ",
        "process_start_time_seconds ",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    // Both handles render the same, process-wide registry.
    assert!(again
        .render()
        .contains("fleet_build_info{component=\"execute\""));

    shutdown.cancel();
    let stopped = tokio::time::timeout(Duration::from_secs(5), server).await;
    assert!(
        matches!(stopped, Ok(Ok(Ok(())))),
        "server did not stop: {stopped:?}"
    );
}
