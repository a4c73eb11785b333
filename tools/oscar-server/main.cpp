// oscar-server: an OpenAI-compatible HTTP server with llama-server's flags
// and endpoints, continuous batching over -np slots, and the OSCAR KV cache.
//
//   oscar-server -m model.gguf -c 8192 -np 4 --host 127.0.0.1 --port 8080
//
// It listens before the model is loaded (/health answers 503 until ready).
// SIGINT/SIGTERM stop new requests, let running ones finish (within
// --timeout), then exit; a second signal cancels what is still running.
#include <httplib.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>
#include <utility>

#include "chat/chat_output_parser.h"
#include "core/error.h"
#include "core/log.h"
#include "engine.h"
#include "grammar/grammar_flags.h"
#include "run_settings.h"
#include "server/http_server.h"
#include "server/embeddings_engine.h"
#include "server/routes.h"
#include "server/scheduler.h"
#include "server/server_context.h"
#include "server/slot_identity.h"
#include "server_flags.h"
#include "chat_setup.h"
#include "download.h"
#include "info_actions.h"
#include "../common/tool_main.h"

using namespace oscar;

namespace {

// Positions one slot may hold and the shared pool's size (0: split cache).
// Unified: the pool is -c (or what --kv-memory holds) and any one slot may
// grow to the smaller of it and the model's context; split: -c / -np each.
std::pair<int, int> kv_layout(const tools::Engine& engine, const tools::RunSettings& s,
                              const server::ServerSettings& ss) {
  const int n_ctx = engine.context_size(s);
  if (!ss.kv_unified) {
    require(ss.kv_memory_bytes == 0, "--kv-memory sizes the shared KV pool; it does not apply with --no-kv-unified");
    const int n_ctx_slot = n_ctx / ss.n_parallel;
    require(n_ctx_slot >= 8, "-c " + std::to_string(n_ctx) + " leaves " + std::to_string(n_ctx_slot) +
                                 " positions per slot for -np " + std::to_string(ss.n_parallel) + "; raise -c");
    return {n_ctx_slot, 0};
  }
  const int n_train = engine.model().config().n_ctx_train;
  const int model_ctx = n_train > 0 ? n_train : n_ctx;
  int pool = n_ctx;
  if (ss.kv_memory_bytes > 0)
    pool = engine.pool_positions_for_memory(s, ss.n_parallel, std::min(model_ctx, n_ctx), ss.kv_memory_bytes);
  require(pool >= 8, "-c " + std::to_string(pool) + " is too small for a KV pool; raise -c");
  return {std::min(model_ctx, pool), pool};
}

// Exits the process if shutdown has not finished by `limit` (a handler
// stuck in a write, a wedged generation): stopping must always end.
void exit_no_later_than(std::chrono::seconds limit) {
  std::thread([limit] {
    std::this_thread::sleep_for(limit);
    std::fprintf(stderr, "oscar-server: shutdown did not finish in %lld s: exiting now\n", (long long)limit.count());
    std::_Exit(3);
  }).detach();
}

// The first signal drains: /health turns 503, new generations get 503,
// idle kept-alive connections close, running generations get up to
// --timeout to finish. A second signal (or the end of --timeout) cancels
// them; their streams end with finish_reason "cancelled" and an error event.
void drain(server::ServerContext& ctx, server::Scheduler& scheduler, const sigset_t& stop_signals, int sig,
           int timeout_s, const Logger& log) {
  log.info(std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
           ": finishing running requests (at most " + std::to_string(timeout_s) + " s), then exiting");
  ctx.begin_drain();
  // The drain limit, then time to cancel, answer and close connections.
  exit_no_later_than(std::chrono::seconds(timeout_s) + std::chrono::seconds(15));
  std::atomic<bool> drained{false};
  std::thread waiter([&] {
    scheduler.shutdown();
    drained.store(true);
  });
  const auto drain_end = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool cancelled = false;
  while (!drained.load()) {
    const timespec wait{0, 100'000'000};
    const bool second = sigtimedwait(&stop_signals, nullptr, &wait) > 0;
    const bool overdue = std::chrono::steady_clock::now() >= drain_end;
    if (!cancelled && (second || overdue)) {
      log.info(second ? "second signal: cancelling running requests"
                      : "--timeout reached while draining: cancelling running requests");
      cancelled = true;
      exit_no_later_than(std::chrono::seconds(10));
      scheduler.cancel_all();
    }
  }
  waiter.join();
  // Let the handlers write their last events before the sockets close.
  for (int i = 0; i < 200 && ctx.in_flight.load() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
}

int run(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help" || a == "--usage") {
      std::printf("usage: oscar-server [-m MODEL | -hf USER/REPO[:QUANT] | -mu URL] [options]\n%s",
                  tools::server_usage().c_str());
      return 0;
    }
  }
  tools::ServerArgs args = tools::parse_server_args(argc, argv);
  tools::RunSettings& s = args.run;
  if (!s.action.empty()) return tools::run_info_action(s.action, "oscar-server", tools::server_usage());
  server::ServerSettings ss = args.server;
  const Logger log(s.verbose ? LogLevel::Debug : LogLevel::Info);
  // -hf / -mu: the model from the download cache (fetched first unless --offline).
  tools::resolve_model_source(s, log);
  // Without -m: the project's default model (set at build time, shared with oscar-cli).
  if (s.model.empty()) s.model = tools::default_model();
  require(!s.model.empty(), "missing -m MODEL (see --help)");

  // Signals go to one waiting thread (sigwait), never interrupt the others.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  server::GenParams defaults;
  defaults.sampling = s.sampling;
  // Without --seed, each request that sets none draws its own (llama-server's -1).
  if (!s.seed_given) defaults.sampling.seed = server::kRandomSeed;
  defaults.sampling.grammar = grammar::grammar_from_flags(s.grammar, s.json_schema);  // for requests with none
  defaults.n_predict = s.n_predict;
  defaults.ignore_eos = s.ignore_eos;
  defaults.cache_prompt = s.cache_prompt;
  server::ServerContext ctx(ss, defaults);

  const int n_http = ss.threads_http > 0 ? ss.threads_http : std::max(16, 4 * ss.n_parallel + 4);
  server::HttpServerLimits limits;
  limits.max_body_bytes = ss.max_body_bytes;
  limits.read_timeout = std::chrono::seconds(ss.read_timeout_s);
  limits.write_timeout = std::chrono::seconds(ss.timeout_s);
  limits.workers = n_http;
  limits.connections = std::max(64, 4 * n_http);
  limits.keys_configured = !ss.api_keys.empty();
  // Plain HTTP requests are read and checked by our layer before httplib
  // sees them (server/http_server.h says why): a short read timeout for heads
  // and bodies, the generation timeout only for writing responses. HTTPS
  // (--ssl-key-file/--ssl-cert-file; Debian's cpp-httplib is built with
  // OpenSSL) is served by httplib's TLS server, which reads requests itself.
  std::unique_ptr<httplib::Server> server_ptr;
  if (!ss.ssl_cert_file.empty()) {
    auto ssl = std::make_unique<httplib::SSLServer>(ss.ssl_cert_file.c_str(), ss.ssl_key_file.c_str());
    require(ssl->is_valid(), "--ssl-cert-file " + ss.ssl_cert_file + " / --ssl-key-file " + ss.ssl_key_file +
                                 ": cannot load the certificate and key (PEM files expected)");
    ssl->new_task_queue = [n_http] { return new httplib::ThreadPool((size_t)n_http); };
    ssl->set_payload_max_length(ss.max_body_bytes);
    ssl->set_read_timeout(ss.read_timeout_s, 0);
    ssl->set_write_timeout(ss.timeout_s, 0);
    log.warn("HTTPS: requests are read by cpp-httplib's TLS server, without the request-framing checks of "
             "docs/http-hardening.md");
    server_ptr = std::move(ssl);
  } else {
    server_ptr = std::make_unique<server::HardenedHttpServer>(limits, [&ctx] { return ctx.draining(); },
                                                              [&ctx](int) {
                                                                ctx.counters.requests++;
                                                                ctx.counters.errors++;
                                                              });
  }
  httplib::Server& svr = *server_ptr;
  server::register_routes(svr, ctx);
  // One line per answered request, with the id the response carries
  // (X-Request-Id), so a request can be followed from a balancer's log.
  svr.set_logger([&log](const httplib::Request& req, const httplib::Response& res) {
    log.info("request " + res.get_header_value("X-Request-Id") + ": " + req.method + " " + req.path + " " +
             std::to_string(res.status));
  });
  int port = ss.port;
  if (port == 0) {
    port = svr.bind_to_any_port(ss.host);
    require(port > 0, "cannot listen on " + ss.host + " (any port)");
  } else {
    require(svr.bind_to_port(ss.host, port), "cannot listen on " + ss.host + ":" + std::to_string(port));
  }
  std::thread http([&] { svr.listen_after_bind(); });
  // httplib's stop() is a no-op until the listening loop runs; wait for it
  // so a failed model load (or an early signal) can always stop the server.
  auto stop_http = [&] {
    for (int i = 0; i < 5000 && !svr.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    svr.stop();
    http.join();
  };
  const std::string scheme = ss.ssl_cert_file.empty() ? "http://" : "https://";
  log.info("listening on " + scheme + ss.host + ":" + std::to_string(port) + " (loading the model)");

  std::unique_ptr<tools::Engine> engine;
  std::unique_ptr<kv::KvCache> cache;
  std::unique_ptr<runtime::Forward> fwd;
  std::unique_ptr<server::Scheduler> scheduler;
  std::unique_ptr<server::Embedder> embedder;
  try {
    engine = tools::Engine::load(s, log);
    const auto [n_ctx_slot, pool_positions] = kv_layout(*engine, s, ss);
    cache = engine->make_cache(s, ss.n_parallel, n_ctx_slot, pool_positions);
    fwd = std::make_unique<runtime::Forward>(engine->model(), *cache, engine->pool(), engine->forward_options(s));
    server::SchedulerConfig sched{ss.n_parallel, n_ctx_slot, s.n_ubatch,
                                  ss.cache_ram_mib < 0 ? -1 : (int64_t)ss.cache_ram_mib << 20};
    sched.context_shift = ss.context_shift;
    if (ss.sleep_idle_seconds > 0) {
      sched.sleep_after = std::chrono::seconds(ss.sleep_idle_seconds);
      sched.sleep = [&engine] { engine->release_weights(); };
      sched.wake = [&engine] { engine->restore_weights(); };
    }
    scheduler = std::make_unique<server::Scheduler>(engine->tokenizer(), *cache, *fwd, sched, log);

    auto m = std::make_unique<server::LoadedModel>();
    m->tokenizer = &engine->tokenizer();
    m->scheduler = scheduler.get();
    m->path = s.model;
    const auto& cfg = engine->model().config();
    m->arch = cfg.arch;
    m->n_vocab = cfg.n_vocab;
    m->n_ctx_train = cfg.n_ctx_train;
    m->n_embd = cfg.n_embd;
    m->n_layer = cfg.n_layer;
    {
      std::ifstream f(s.model, std::ios::binary | std::ios::ate);
      m->file_bytes = f ? (long long)f.tellg() : 0;
    }
    m->kv_description = cache->describe();
    m->kv_cache = cache.get();
    m->kv_rotations = runtime::rotation_mode_name(engine->forward_options(s).rotations->mode);
    m->slot_identity = server::slot_identity(engine->model(), *cache, engine->forward_options(s).rotations);
    m->kv_tiers = server::check_cache_tiers(cache->config(), engine->context_size(s), ss.n_parallel);
    if (!m->kv_tiers.warning.empty()) log.warn("KV cache: " + m->kv_tiers.warning);
    const tok::Vocab& vocab = engine->tokenizer().vocab();
    std::vector<std::string> notes;
    const tools::ChosenTemplate chosen = tools::choose_chat_template(s, vocab.chat_template(), notes);
    for (const auto& n : notes) log.warn(n);
    log.info("chat template: " + chosen.origin);
    m->template_source = chosen.source;
    const std::string bos = vocab.bos() != tok::kNoToken ? vocab.text(vocab.bos()) : "";
    const std::string eos = vocab.eos() != tok::kNoToken ? vocab.text(vocab.eos()) : "";
    m->tmpl = std::make_unique<chat::ChatTemplate>(m->template_source, bos, eos);
    // --skip-chat-parsing: everything the model writes stays in the content.
    if (!ss.skip_chat_parsing) m->output_format = chat::detect_output_format(m->template_source);
    if (ss.embeddings) {
      const server::Pooling pooling = server::resolve_pooling(engine->model(), ss.pooling);
      require(pooling != server::Pooling::Rank, "--pooling rank: the model has no reranking head (none is supported)");
      embedder = std::make_unique<server::Embedder>(engine->model(), engine->make_cache(s, 1, n_ctx_slot),
                                                    engine->forward_options(s), s.n_threads, s.n_ubatch, pooling);
      // The embedder reads the same weights: it wakes them and keeps them awake.
      embedder->set_keep_awake([&scheduler] { return scheduler->keep_awake(); });
      m->embedder = embedder.get();
      log.info(std::string("embeddings: pooling ") + server::pooling_name(pooling) + ", inputs up to " +
               std::to_string(n_ctx_slot) + " tokens");
    }
    ctx.publish(std::move(m));
    log.info("model loaded: " + std::to_string(ss.n_parallel) + " slots of up to " + std::to_string(n_ctx_slot) +
             " positions" + (pool_positions > 0 ? " sharing a pool of " + std::to_string(cache->pool_positions()) : "") +
             "; server ready on " + scheme + ss.host + ":" + std::to_string(port));
  } catch (...) {
    stop_http();
    throw;
  }

  int sig = 0;
  sigwait(&stop_signals, &sig);
  drain(ctx, *scheduler, stop_signals, sig, ss.timeout_s, log);
  stop_http();
  log.info("stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return oscar::tools::tool_main("oscar-server", argc, argv, run); }
