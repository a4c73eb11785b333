// oscar-server: an OpenAI-compatible HTTP server with llama-server's flags
// and endpoints, continuous batching over -np slots, and the OSCAR KV cache.
//
//   oscar-server -m model.gguf -c 8192 -np 4 --host 127.0.0.1 --port 8080
//
// It listens before the model is loaded (/health answers 503 until ready).
// SIGINT/SIGTERM stop new requests, let running ones finish, then exit; a
// second signal cancels what is still running.
#include <httplib.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "chat/chat_output_parser.h"
#include "core/error.h"
#include "core/log.h"
#include "engine.h"
#include "run_settings.h"
#include "server/embeddings_engine.h"
#include "server/routes.h"
#include "server/scheduler.h"
#include "server/server_context.h"
#include "server_flags.h"
#include "../common/tool_main.h"

using namespace oscar;

namespace {

std::string read_text(const std::string& path, const char* what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(std::string(what) + ": cannot read '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int run(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "-h" || std::string(argv[i]) == "--help") {
      std::printf("usage: oscar-server [-m MODEL] [options]\n%s%s", tools::common_usage().c_str(),
                  tools::server_usage().c_str());
      return 0;
    }
  tools::ServerFlags flags;
  tools::RunSettings s = tools::parse_run_settings(argc, argv, &flags);
  // Without -m: the project's default model (set at build time, shared with oscar-cli).
  if (s.model.empty()) s.model = tools::default_model();
  require(!s.model.empty(), "missing -m MODEL (see --help)");
  server::ServerSettings ss = flags.settings;
  ss.reasoning_format = s.reasoning_format;
  ss.n_batch = s.n_batch;
  const Logger log(s.verbose ? LogLevel::Debug : LogLevel::Info);

  // Signals go to one waiting thread (sigwait), never interrupt the others.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  server::GenParams defaults;
  defaults.sampling = s.sampling;
  defaults.n_predict = s.n_predict;
  server::ServerContext ctx(ss, defaults);

  httplib::Server svr;
  const int n_http = ss.threads_http > 0 ? ss.threads_http : std::max(16, 4 * ss.n_parallel + 4);
  svr.new_task_queue = [n_http] { return new httplib::ThreadPool((size_t)n_http); };
  svr.set_payload_max_length(ss.max_body_bytes);
  svr.set_read_timeout(ss.timeout_s, 0);
  svr.set_write_timeout(ss.timeout_s, 0);
  server::register_routes(svr, ctx);
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
  log.info("listening on http://" + ss.host + ":" + std::to_string(port) + " (loading the model)");

  std::unique_ptr<tools::Engine> engine;
  std::unique_ptr<kv::KvCache> cache;
  std::unique_ptr<runtime::Forward> fwd;
  std::unique_ptr<server::Scheduler> scheduler;
  std::unique_ptr<server::Embedder> embedder;
  try {
    engine = tools::Engine::load(s, log);
    const int n_ctx = engine->context_size(s);
    const int n_ctx_slot = n_ctx / ss.n_parallel;
    require(n_ctx_slot >= 8, "-c " + std::to_string(n_ctx) + " leaves " + std::to_string(n_ctx_slot) +
                                 " positions per slot for -np " + std::to_string(ss.n_parallel) + "; raise -c");
    cache = engine->make_cache(s, ss.n_parallel, n_ctx_slot);
    fwd = std::make_unique<runtime::Forward>(engine->model(), *cache, engine->pool(), engine->forward_options(s));
    scheduler = std::make_unique<server::Scheduler>(
        engine->tokenizer(), *cache, *fwd, server::SchedulerConfig{ss.n_parallel, n_ctx_slot, s.n_ubatch}, log);

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
    const tok::Vocab& vocab = engine->tokenizer().vocab();
    if (!s.chat_template_file.empty()) m->template_source = read_text(s.chat_template_file, "--chat-template-file");
    else if (!vocab.chat_template().empty()) m->template_source = vocab.chat_template();
    else {
      log.warn("the model has no chat template: chat requests use ChatML");
      m->template_source = server::chatml_template();
    }
    const std::string bos = vocab.bos() != tok::kNoToken ? vocab.text(vocab.bos()) : "";
    const std::string eos = vocab.eos() != tok::kNoToken ? vocab.text(vocab.eos()) : "";
    m->tmpl = std::make_unique<chat::ChatTemplate>(m->template_source, bos, eos);
    m->output_format = chat::detect_output_format(m->template_source);
    if (ss.embeddings) {
      const server::Pooling pooling = server::resolve_pooling(engine->model(), ss.pooling);
      require(pooling != server::Pooling::Rank, "--pooling rank: the model has no reranking head (none is supported)");
      embedder = std::make_unique<server::Embedder>(engine->model(), engine->make_cache(s, 1, n_ctx_slot),
                                                    engine->forward_options(s), s.n_threads, s.n_ubatch, pooling);
      m->embedder = embedder.get();
      log.info(std::string("embeddings: pooling ") + server::pooling_name(pooling) + ", inputs up to " +
               std::to_string(n_ctx_slot) + " tokens");
    }
    ctx.publish(std::move(m));
    log.info("model loaded: " + std::to_string(ss.n_parallel) + " slots x " + std::to_string(n_ctx_slot) +
             " positions; server ready on http://" + ss.host + ":" + std::to_string(port));
  } catch (...) {
    stop_http();
    throw;
  }

  int sig = 0;
  sigwait(&stop_signals, &sig);
  log.info(std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
           ": finishing running requests, then exiting");
  ctx.begin_drain();
  // A second signal while draining cancels what is still running.
  std::atomic<bool> drained{false};
  std::thread drain([&] {
    scheduler->shutdown();
    drained.store(true);
  });
  while (!drained.load()) {
    const timespec wait{0, 100'000'000};
    if (sigtimedwait(&stop_signals, nullptr, &wait) > 0) {
      log.info("second signal: cancelling running requests");
      scheduler->cancel_all();
    }
  }
  drain.join();
  // Let the handlers write their last events before the sockets close.
  for (int i = 0; i < 200 && ctx.in_flight.load() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  stop_http();
  log.info("stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return oscar::tools::tool_main("oscar-server", argc, argv, run); }
