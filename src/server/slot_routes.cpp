#include "server/slot_routes.h"

#include <httplib.h>

#include "server/http_util.h"
#include "server/server_context.h"
#include "server/slot_persistence.h"

namespace oscar::server {

namespace {

// The {id} of the path: decimal digits only, as a slot id (400 otherwise, as llama-server).
int slot_id(const std::string& text) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos)
    throw ApiError(400, "Invalid slot ID");
  return std::stoi(text);
}

std::string filename_of(const std::string& body) {
  const Json j = parse_body(body);
  if (!j.is_object() || !j.contains("filename") || !j["filename"].is_string())
    throw ApiError(400, "\"filename\" (a string) is required");
  return j["filename"].get<std::string>();
}

Json handle(ServerContext& ctx, int id, const std::string& action, const std::string& body) {
  const LoadedModel& m = ctx.model();
  SlotPersistence files(ctx.settings().slot_save_path, m.slot_identity, *m.scheduler);
  if (action == "save") {
    const SlotSaveResult r = files.save(id, filename_of(body));
    return {{"id_slot", r.id_slot}, {"filename", r.filename}, {"n_saved", r.n_saved}, {"n_written", r.n_written},
            {"timings", {{"save_ms", r.save_ms}}}};
  }
  if (action == "restore") {
    const SlotRestoreResult r = files.restore(id, filename_of(body));
    return {{"id_slot", r.id_slot}, {"filename", r.filename}, {"n_restored", r.n_restored}, {"n_read", r.n_read},
            {"timings", {{"restore_ms", r.restore_ms}}}};
  }
  if (action == "erase") return {{"id_slot", id}, {"n_erased", files.erase(id)}};
  throw ApiError(400, "Invalid action");
}

}  // namespace

void register_slot_routes(httplib::Server& svr, ServerContext& ctx) {
  svr.Post(R"(/slots/([^/]*))", [&ctx](const httplib::Request& req, httplib::Response& res) {
    guarded(res, [&] {
      if (!ctx.settings().slots_endpoint)
        throw ApiError(501, "This server does not support slots endpoint.", "not_supported_error");
      // As llama-server: without a folder every action (erase too) is refused.
      if (ctx.settings().slot_save_path.empty())
        throw ApiError(501, "This server does not support slots action. Start it with `--slot-save-path`",
                       "not_supported_error");
      const int id = slot_id(req.matches.size() > 1 ? req.matches[1].str() : "");
      reply_json(res, handle(ctx, id, req.get_param_value("action"), req.body));
    });
  });
}

}  // namespace oscar::server
