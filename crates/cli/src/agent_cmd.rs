//! `iolab agent`: serve a node for a coordinator, over stdin/stdout (`--stdio`, how ssh runs
//! it) or as a TLS daemon (`--listen`, with a token). It logs to stderr and does I/O only
//! under its `--allow` directories.

use crate::args::AgentArgs;
use anyhow::{bail, Context, Result};
use iolab_cluster::transport::{join, log, stdio, tls};
use iolab_cluster::{AgentService, Allow, Tap, Tapped};
use iolab_metrics::{Board, Endpoint, Feed, RunStart};
use iolab_spec::Plan;
use iolab_workload::model::now_unix_s;
use iolab_workload::{Event, Sink, Status};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// The token of a token file: its first line, which must not be empty.
pub fn read_token(path: &std::path::Path) -> Result<String> {
    let text = iolab_spec::input::read_text(path, "token file", iolab_spec::input::TOKEN_FILE_MAX)?;
    let token = text.lines().next().unwrap_or("").trim().to_string();
    if token.is_empty() {
        bail!(
            "token file {} is empty; put a secret on its first line (head -c 32 /dev/urandom | base64)",
            path.display()
        );
    }
    Ok(token)
}

fn state_dir() -> PathBuf {
    match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d).join("iolab/agent"),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| ".".into())).join(".local/state/iolab/agent"),
    }
}

pub fn run(args: AgentArgs) -> Result<ExitCode> {
    if !args.stdio && args.listen.is_none() && args.join.is_none() {
        bail!(
            "say how to serve: --stdio (for ssh and exec:// nodes), --listen HOST:PORT --token-file FILE, or --join ADDR --token-file FILE"
        );
    }
    let allow = Allow::new(&args.allow).context("the agent's --allow directories")?;
    let dirs: Vec<String> = allow.dirs().iter().map(|d| d.display().to_string()).collect();
    let dirs = if dirs.is_empty() { "nothing".to_string() } else { dirs.join(", ") };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the agent's runtime")?;
    let state = args.state_dir.clone().unwrap_or_else(state_dir);
    let service = AgentService::new(allow);
    // Traces sent for replay jobs are kept in the state directory, never under --allow.
    let service = match service.clone().with_trace_cache(&state.join("traces")) {
        Ok(s) => s,
        Err(e) => {
            log(&format!("{e}; replay jobs will be refused"));
            service
        }
    };
    // --metrics-listen: this node's runs, live, for as long as the agent serves.
    let (service, _endpoint) = match &args.metrics_listen {
        Some(addr) => {
            let board = Board::new();
            let endpoint = Endpoint::start(addr, board.clone())?;
            log(&format!("serving live metrics at http://{}/metrics", endpoint.addr()));
            (service.with_tap(Arc::new(MetricsTap(board))), Some(endpoint))
        }
        None => (service, None),
    };
    let traces = service.trace_dir();
    // Asked to end (SIGTERM, SIGINT: the coordinator closing, a daemon stopped): the traces
    // this process was sent go with it.
    let gone = traces.clone();
    let _ = ctrlc::set_handler(move || {
        if let Some(d) = &gone {
            let _ = std::fs::remove_dir_all(d);
        }
        log("asked to end");
        std::process::exit(143);
    });
    let result = serve(&args, rt, service, &dirs, &state);
    if let Some(d) = traces {
        let _ = std::fs::remove_dir_all(d);
    }
    result
}

/// The agent's runs onto the metrics board: each run's series labelled by the node's name in
/// the run (the host's, when the coordinator gave none) and by the run's mark.
struct MetricsTap(Arc<Board>);

struct TappedFeed(Feed);

impl Sink for TappedFeed {
    fn event(&mut self, node: Option<&str>, event: Event<'_>) {
        self.0.event(node, event)
    }
}

impl Tapped for TappedFeed {
    fn end(&mut self, status: Status) {
        self.0.finish(status)
    }
}

impl Tap for MetricsTap {
    fn begin(&self, node: &str, run: Option<&str>, plan: &Plan) -> Box<dyn Tapped> {
        let started = now_unix_s();
        let id = run.map(str::to_string).unwrap_or_else(|| format!("unmarked-{}", started as u64));
        let node = if node.is_empty() { iolab_sysstat::hostname() } else { node.to_string() };
        Box::new(TappedFeed(self.0.begin(RunStart {
            id,
            kind: "agent",
            labels: &[],
            plan,
            node,
            started_unix_s: started,
        })))
    }
}

fn serve(
    args: &AgentArgs,
    rt: tokio::runtime::Runtime,
    service: AgentService,
    dirs: &str,
    state: &std::path::Path,
) -> Result<ExitCode> {
    if let Some(addr) = &args.join {
        let Some(token_file) = &args.token_file else {
            bail!("--join needs --token-file FILE: the coordinator and the agent prove the token to each other");
        };
        let token = read_token(token_file)?;
        let (rank, from) = match args.rank {
            Some(r) => (r, "--rank"),
            None => join::rank_from(|k| std::env::var(k).ok())?,
        };
        log(&format!("rank {rank} (from {from}), joining {addr}, allowed under: {dirs}"));
        let served = rt
            .block_on(join::join(addr, &token, rank, args.join_timeout, |proof| service.joined(rank, proof).server()));
        rt.shutdown_background();
        served?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(addr) = &args.listen {
        let Some(token_file) = &args.token_file else {
            bail!("--listen needs --token-file FILE: an agent never listens without a shared token");
        };
        let token = read_token(token_file)?;
        let (cert, key) = match (&args.cert, &args.key) {
            (Some(c), Some(k)) => tls::load(c, k)?,
            _ => tls::load_or_make(state)?,
        };
        let fp = tls::fingerprint(&cert);
        let served = rt.block_on(async {
            let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("listening on {addr}"))?;
            let local = listener.local_addr().map(|a| a.to_string()).unwrap_or_else(|_| addr.clone());
            log(&format!("listening on {local} (TLS), certificate {fp}, allowed under: {dirs}"));
            tls::serve(listener, service.server(), token, cert, key, args.handshake_timeout).await?;
            Ok::<_, anyhow::Error>(())
        });
        rt.shutdown_background();
        served?;
        return Ok(ExitCode::SUCCESS);
    }
    log(&format!("serving over stdio, allowed under: {dirs}"));
    let served = rt.block_on(stdio::serve_stdio(service.server()));
    // Reading stdin holds a blocking thread; don't wait for it.
    rt.shutdown_background();
    served.context("serving over stdio")?;
    Ok(ExitCode::SUCCESS)
}
