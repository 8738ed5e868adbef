// The data contract (web/README.md): result documents, live snapshots and the page's META.

export type Percentiles = Record<string, number>;

export interface Summary {
  requests: number;
  failures: number;
  body_bytes?: number;
  wire_bytes?: number;
  min_us: number;
  max_us: number;
  mean_us: number;
  stdev_us?: number;
  percentiles_us: Percentiles;
  /** Server-Sent Events read (as they arrive; a second's: those that arrived in it); absent when none */
  events?: number;
  /** a language model's output tokens read from its streams (as they arrive, a stream's usage at its end); absent when none */
  tokens?: number;
}

export interface Endpoint extends Summary {
  method: string;
  name: string;
  status_codes?: Record<string, number>;
  /** [[percentile (0..100), value_us], ...] from the exact HDR histogram; older results lack it. */
  spectrum?: [number, number][];
  /** the response-time distribution's bars, [[from_us, to_us, requests], ...] (log-spaced, exact counts); older results lack it */
  distribution?: [number, number, number][];
  /** where the time went (HTTP/1.1 runs; absent live, for HTTP/2 and MQTT, and in older results) */
  timings?: Timings | null;
  /** its event streams (HTTP/1.1 text/event-stream responses; absent live and where none was read: stats/streams.rs) */
  stream?: StreamReport | null;
  /** [[upper bound µs, requests at most that long], ...] at Prometheus' usual bounds (/metrics' histograms) */
  buckets?: [number, number][];
  /** the whole HDR histogram (base64 of its V2 deflate encoding): what merges and thresholds read */
  histogram?: string;
}

/** One phase of the latency breakdown over the run (`stats/timing.rs`). */
export interface Phase {
  /** responses that had it (connect, tls: the connections opened) */
  count: number;
  total_us?: number;
  mean_us: number;
  min_us?: number;
  max_us?: number;
  /** keys "50", "90", "95", "99", "100" */
  percentiles_us?: Record<string, number>;
  /** the phase's HDR histogram (base64), so that processes' phases merge exactly */
  histogram?: string;
}

export interface Timings {
  connect: Phase;
  tls: Phase;
  waiting: Phase;
  receiving: Phase;
}

/** An endpoint's event streams over the run (`stats/streams.rs`). */
export interface StreamReport {
  /** streams begun (their heads read) */
  streams: number;
  /** ended as their framing says (last chunk, Content-Length, a close-delimited body's close) */
  completed: number;
  /** ended otherwise, each a failed request too: closed or reset mid-stream, timed out, an event too large */
  cut: number;
  /** the cut streams' failure messages and how many */
  cut_reasons: Record<string, number>;
  events: number;
  events_per_s: number;
  /** from the request's start to the stream's first event */
  first_event: Phase;
  /** between consecutive events of a stream */
  gap: Phase;
  /** a language model's output tokens, when the streams carried them (OpenAI's, Anthropic's formats: http/tokens.rs) */
  tokens?: TokenReport | null;
}

/** The tokens of a language model's streamed answers (`stats/streams.rs`, vLLM's definitions). */
export interface TokenReport {
  /** streams that carried output */
  streams: number;
  /** output tokens: the server's usage where a stream gave one, else its output events */
  tokens: number;
  tokens_per_s: number;
  /** streams whose tokens are the server's count */
  counted_by_server: number;
  /** time to first token: from the request's start to its first output event */
  ttft: Phase;
  /** inter-token latency: between consecutive output events of a stream */
  itl: Phase;
  /** time per output token: from a stream's first token to its end, over its tokens but the first */
  tpot: Phase;
}

/** The run up to the end of a second (Locust's history CSV columns). */
export interface Cumulative {
  requests: number;
  failures: number;
  median_us: number;
  mean_us: number;
  min_us: number;
  max_us: number;
  body_bytes: number;
}

/** A second's paced sends (the open model). */
export interface SecondSchedule {
  sent: number;
  late: number;
  mean_lag_us: number;
  max_lag_us: number;
  /** so that seconds of several processes merge exactly */
  lag_sum_us: number;
}

export interface Point extends Summary {
  t: number;
  unix?: number;
  users?: number;
  /** the engine's connections open in this second (the most seen: TCP, with TLS or a WebSocket over it); absent in older results */
  connections?: number;
  endpoints?: Endpoint[];
  cumulative?: Cumulative;
  schedule?: SecondSchedule;
  /** the second's HDR histogram (base64), for merges */
  histogram?: string;
}

export interface ErrorEntry {
  method: string;
  name: string;
  kind: string;
  status?: number | null;
  message: string;
  /** the failure as Locust writes it (`squall -f` runs): shown instead of `message` */
  locust?: string;
  count: number;
  first_seen_s?: number;
  last_seen_s?: number;
}

export interface ExceptionEntry {
  count: number;
  message: string;
  traceback?: string;
  /** where it was raised (Locust's column): "local", or the workers */
  nodes?: string;
}

export interface Schedule {
  rate: number;
  arrival?: string;
  intended: number;
  sent: number;
  late: number;
  late_after_ms?: number;
  mean_lag_us?: number;
  max_lag_us?: number;
  dropped: number;
  /** so that the schedules of several processes merge exactly */
  lag_sum_us?: number;
}

export interface Load {
  model?: string;
  connections?: number;
  threads?: number;
  requests?: number | null;
  duration_s?: number | null;
  ramp_s?: number | null;
  http2?: boolean;
  keepalive?: boolean;
  timeout_s?: number | null;
  rate?: number | null;
  users?: number | null;
  spawn_rate?: number | null;
}

export interface Delivery {
  sent?: number;
  delivered?: number;
  lost?: number;
  duplicated?: number;
  out_of_order?: number;
  received?: number;
  /** messages without this run's header (another publisher on the same topics) */
  foreign?: number;
  /** subscribe-only: distinct senders seen */
  senders?: number;
}

/** One MQTT client's counts (`mqtt.per_client`). */
export interface MqttClient {
  index: number;
  id: string;
  /** messages that fell due (each took a sequence number): published + failed */
  sent: number;
  published: number;
  /** refused, unacknowledged or never sent (the unsent among them) */
  failed: number;
  /** fell due but never written: no connection, or the run ended first */
  unsent: number;
  /** published per second of measured time */
  rate: number;
  delivered?: number;
  lost?: number;
  duplicated?: number;
  out_of_order?: number;
}

export interface MqttResult {
  broker?: string;
  mqtt_version?: string;
  qos?: number;
  topic?: string;
  filter?: string;
  clients?: number;
  rate_per_client?: number | null;
  inflight?: number;
  verify?: boolean;
  subscribe_only?: boolean;
  sent?: number;
  published?: number;
  failed?: number;
  unsent?: number;
  publish_rate?: number;
  delivery?: Delivery | null;
  first_client?: number;
  retain?: boolean;
  connect_phase_s?: number;
  measured_s?: number;
  /** the clients' publish rates: min, median, max */
  client_rate?: { min: number; median: number; max: number };
  per_client?: MqttClient[];
}

/** One threshold's verdict (`--threshold`): `result.thresholds`. */
export interface Verdict {
  threshold: string;
  /** the endpoint the threshold names ("GET /x", "/x", "PUBLISH"); null: the whole run */
  endpoint?: string | null;
  /** "p95", "max", "error_rate", "rps", "lost", ... */
  metric?: string;
  op?: string;
  limit?: number;
  /** the measured value in the threshold's terms (µs, a fraction, per second, a count); null: none */
  value?: number | null;
  /** the measured value as text ("412.000 ms", "n/a") */
  shown?: string;
  passed: boolean;
  /** why there is no value ("no endpoint '/typo' in this run"), or "" */
  reason?: string;
}

/** One step of `--find-limit` (the probe too: load 0, the closed model). */
export interface LimitStep {
  /** offered load (rate or users); 0 for the probe */
  load: number;
  achieved?: number;
  p50_us?: number | null;
  p95_us?: number | null;
  p99_us?: number | null;
  /** a fraction (0..1) */
  error_rate?: number | null;
  requests?: number;
  abandoned?: number;
  passed: boolean;
  /** why it failed, or "" */
  reason?: string;
  /** the load generator could not offer the load: the step says nothing about the target */
  generator_bound?: boolean;
  /** squall's connections limited the step: it ran again with more (the next step, same load) */
  retry?: boolean;
  /** the connections the step could open (bench: they follow Little's law) */
  connections?: number | null;
  /** every connection busy while sends went late (the step then runs again with more) */
  connection_bound?: boolean;
  /** mean response time from the actual send (the open model's lag taken out) */
  service_us?: number;
  /** the standard error of `achieved` */
  achieved_se?: number;
  /** each inner whole second's median latency (the trend test's data) */
  medians_us?: number[];
  /** each check with its numbers: why the step passed or failed */
  checks?: { check: string; passed: boolean; detail: string }[];
  verdicts?: Verdict[];
}

/** `squall bench --find-limit`: the breaking point search (`result.limit`). */
export interface Limit {
  /** the highest load that passed; null: none did */
  load: number | null;
  /** "req/s", "users", "msg/s" */
  unit?: string;
  /** the load of the step that failed above it, or null */
  failed_at?: number | null;
  reason?: string;
  /** the thresholds each step was judged by */
  slo?: string[];
  /** how the search ran: keep_up, precision, start, step_s, connections, ... */
  settings?: Record<string, number | string | boolean | null>;
  probe?: LimitStep | null;
  /** in the order run */
  steps: LimitStep[];
}

/** One second of a monitored target (`monitor.targets[i].series`); `t` as the timeseries' `t`. */
export interface TargetSample {
  t: number;
  unix?: number;
  /** 100 = one core */
  cpu_percent?: number | null;
  rss_bytes?: number | null;
  threads?: number | null;
  /** null: not readable (another user's processes) */
  fds?: number | null;
  processes?: number | null;
}

export interface HostSample {
  t: number;
  unix?: number;
  /** up to cpus * 100 */
  cpu_percent?: number | null;
  mem_used_bytes?: number | null;
  mem_total_bytes?: number | null;
}

export interface MonitorTarget {
  /** "name nginx", "pid 123 (gunicorn)", "cgroup /sys/fs/cgroup/...", "container web" */
  label: string;
  series: TargetSample[];
  peak?: Partial<Record<"cpu_percent" | "rss_bytes" | "threads" | "fds" | "processes", number | null>>;
  mean?: Partial<Record<"cpu_percent" | "rss_bytes" | "threads" | "fds" | "processes", number | null>>;
  /** the first sampling failure, one line */
  error?: string;
}

export interface MonitorHost {
  cpus?: number;
  series: HostSample[];
  peak?: Partial<Record<"cpu_percent" | "mem_used_bytes" | "mem_total_bytes", number | null>>;
  mean?: Partial<Record<"cpu_percent" | "mem_used_bytes" | "mem_total_bytes", number | null>>;
}

/** `--monitor-*`: the target's resources and the host's, every second (`result.monitor`, live `monitor`). */
export interface Monitor {
  targets: MonitorTarget[];
  host: MonitorHost | null;
}

export interface GeneratorThread {
  name: string;
  cpu_percent_mean?: number;
  cpu_percent_peak?: number;
  saturated_s?: number;
}

/** A paced run's late sends as the generator judged them (python/squall/lateness.py). */
export interface Lateness {
  late_after_ms?: number;
  sent?: number;
  late?: number;
  /** late / sent */
  share?: number;
  max_lag_us?: number;
  /** the worst run of seconds each with more than `rule.share` late (null: none long enough) */
  streak?: { first: number; last: number; sent: number; late: number } | null;
  sustained?: boolean;
  material?: boolean;
  /** "so far" while the run goes (material is judged only at its end), "run" in the result */
  judged?: string;
  rule?: { share?: number; min_late?: number; sustained_s?: number };
}

/** squall watching itself (`result.generator`, live `generator`). */
export interface Generator {
  threads?: GeneratorThread[];
  /** CPU null: not measured (a run shorter than the one-second sampling) */
  process?: {
    cpu_percent_mean?: number | null;
    cpu_percent_peak?: number | null;
    cpus?: number;
    /** resident memory before the run, and its peak (bytes; absent in older results) */
    rss_start_bytes?: number | null;
    rss_peak_bytes?: number | null;
  } | null;
  /** one line each; empty when squall kept up */
  warnings?: string[];
  saturated?: boolean;
  /** paced runs (null or absent otherwise, and in results older than the rule) */
  lateness?: Lateness | null;
}

/** One worker of a distributed run (`result.workers`, squall/distributed/workers.py). */
export interface WorkerEntry {
  index: number;
  host?: string | null;
  node_ip?: string | null;
  node_id?: string | null;
  /** its part of the load: users, rate, requests, ... */
  share?: Record<string, number | string | boolean | null>;
  state: string; // "finished" | "lost"
  exit_code?: number | null;
  requests: number;
  failures: number;
  duration_s: number;
  rate: number;
  cpu_s?: number | null;
  cpu_percent?: number | null;
  stream?: { seconds: number; lag_max_s: number; lag_mean_s: number; feed_bytes: number; poll_bytes: number };
  /** its own HDR histogram (base64): the merge can be checked, or redone without it */
  histogram?: string;
  schedule_lag_us?: { mean: number; max: number };
  published?: number;
  /** why it was lost */
  lost?: string;
  /** the lost worker's index this one took over from */
  replaces?: number;
}

/** How a distributed run went (`result.distributed`). */
export interface Distributed {
  ray?: string | null;
  workers: number;
  nodes: number;
  on_worker_loss?: string;
  lost: number;
  /** what lost workers had streamed: not in the merged totals */
  lost_requests?: number;
  driver?: {
    cpu_s: number;
    wall_s: number;
    polls: number;
    poll_bytes_mean: number;
    cpu_us_per_poll: number;
    late_parts: number;
  };
}

export interface Result {
  squall_version?: string;
  /** the run's command line as typed (credentials redacted): what `squall report` shows */
  command_line?: string;
  kind?: string; // "http" | "script" | "mqtt"
  url?: string;
  method?: string;
  start_unix?: number;
  duration_s?: number;
  /** the totals (aggregate, endpoints, errors) count from this many seconds into the run: their last
   * reset (--reset-stats, the page's Reset); their rates are over duration_s - reset_s. Absent: none */
  reset_s?: number;
  stop_reason?: string;
  load?: Load;
  aggregate?: Endpoint;
  endpoints?: Endpoint[];
  errors?: ErrorEntry[];
  exceptions?: ExceptionEntry[];
  connect?: Summary | null;
  /** the connect times' HDR histogram (base64), for merges */
  connect_histogram?: string;
  /** ten log-spaced buckets of the response times, fastest to slowest: [{upper_us, count}, ...] */
  latency_histogram?: { upper_us: number; count: number }[];
  schedule?: Schedule | null;
  abandoned?: number;
  timeseries?: Point[];
  mqtt?: MqttResult | null;
  thresholds?: Verdict[] | null;
  /** `--find-limit`: the search (this result is the highest passing step's own) */
  limit?: Limit | null;
  monitor?: Monitor | null;
  generator?: Generator | null;
  /** a distributed run's workers and how it went */
  workers?: WorkerEntry[] | null;
  distributed?: Distributed | null;
}

export interface Controls {
  start?: boolean;
  users?: boolean;
  stop?: boolean;
  reset?: boolean;
  /** `squall -f`: after a test the page may start another (Locust's New), so it keeps polling */
  new?: boolean;
}

export interface Meta {
  command?: string; // "bench" | "run" | "mqtt"
  command_line?: string;
  target?: string;
  title?: string;
  squall_version?: string;
  controls?: Controls | null;
  /** `host_required`: the User classes that have no host (the form refuses to start without one) */
  form?: { users?: number; spawn_rate?: number; host?: string; host_required?: string | null } | null;
  /** the configured thresholds' texts (live: pending until the result's verdicts) */
  thresholds?: string[] | null;
  /** the load as configured (live: until the result's `load`); MQTT may send {} */
  load?: Load | null;
  /** [] when the run monitors something (the section waits for the first sample), else null */
  monitor?: unknown[] | null;
}

export interface LiveMqtt {
  connected?: number;
  sent?: number;
  published?: number;
  delivered?: number;
  failed?: number;
}

export interface Live {
  state: string;
  kind?: string;
  elapsed_s?: number;
  users?: number;
  target_users?: number | null;
  cursor: number;
  timeseries?: Point[];
  totals?: {
    /** null until the run's first second */
    aggregate?: Endpoint | null;
    endpoints?: Endpoint[];
    errors?: ErrorEntry[];
    exceptions?: ExceptionEntry[];
    /** after a reset: the second of the run the totals count from */
    reset_s?: number;
  };
  schedule?: Schedule | null;
  mqtt?: LiveMqtt | null;
  /** the samples so far (squall sends them all each second; a part from some second on works too) */
  monitor?: Monitor | null;
  generator?: Generator | null;
  finished?: boolean;
  /** `squall -f`: tests started so far (a new one starts the page's data over), whether the page may
   * start one now, the running test's host and spawn rate */
  test?: number;
  startable?: boolean;
  host?: string | null;
  spawn_rate?: number | null;
}

/** Locust's task ratio (`/api/tasks`, its "Current ratio"): per class, and the share of all tasks. */
export interface Ratios {
  [name: string]: { ratio: number; tasks?: Ratios };
}

export interface Run {
  label: string;
  result: Result;
}

/** What a locustfile's route adds to the dashboard's page when it renders Locust's `index.html` with
 * `extended_tabs`, `extended_tables` and `extended_csv_files` (squall.web.flask_app `extension_of`): a
 * section per tab, its rows the `extended_stats` entry of its key in `/stats/requests`, its columns
 * `columns` (null: the keys of its first row); the CSV files among the downloads. */
export interface Extension {
  tabs: { key: string; title: string; columns: { key: string; title: string }[] | null }[];
  csv_files: { href: string; title: string }[];
}

export type Doc =
  | { mode: "report"; meta?: Meta; result: Result; downloads?: Record<string, string> } // downloads: file name -> text (the CSVs)
  | { mode: "live"; meta?: Meta; token?: string; extension?: Extension } // token: the run's, sent with each control (X-Squall-Token)
  | { mode: "compare"; meta?: Meta; runs: Run[] };
