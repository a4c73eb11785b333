// -hf user/repo[:quant]: which file of a repository is the model, and where it
// lives in the Hugging Face cache layout llama.cpp shares:
//   <hub>/models--user--repo/refs/main            the commit of the main branch
//   <hub>/models--user--repo/blobs/<sha256>       the file's bytes
//   <hub>/models--user--repo/snapshots/<commit>/<path> -> ../../blobs/<sha256>
// Online it asks the server's API (api/models/REPO/refs, .../tree/COMMIT);
// offline, or when the server cannot be reached, it reads the cache.
#include <httplib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "download.h"

namespace fs = std::filesystem;

namespace oscar::tools {

namespace {

struct RepoFile {
  std::string path;    // inside the repository
  std::string sha256;  // the LFS oid (hex), "" when unknown
};

struct SplitInfo {
  std::string prefix;  // path without "-00001-of-00003.gguf"
  int index = 1, count = 1;
};

SplitInfo split_info(const std::string& path) {
  static const std::regex re("^(.+)-([0-9]{5})-of-([0-9]{5})\\.gguf$", std::regex::icase);
  std::smatch m;
  if (std::regex_match(path, m, re)) return {m[1].str(), std::stoi(m[2].str()), std::stoi(m[3].str())};
  return {path, 1, 1};
}

bool is_model_file(const std::string& path) {
  if (path.size() < 5 || path.compare(path.size() - 5, 5, ".gguf") != 0) return false;
  const std::string name = fs::path(path).filename().string();
  return name.find("mmproj") == std::string::npos && name.find("imatrix") == std::string::npos &&
         name.find("mtp-") == std::string::npos;
}

// The quant tag, as llama.cpp picks it: the given one, else Q4_K_M, then
// Q8_0, then the first model file (first part of a split model).
const RepoFile* pick_model(const std::vector<RepoFile>& files, const std::string& tag) {
  std::vector<std::string> tags = tag.empty() ? std::vector<std::string>{"Q4_K_M", "Q8_0"} : std::vector<std::string>{tag};
  auto first_part = [](const RepoFile& f) { return split_info(f.path).index == 1; };
  for (const auto& t : tags) {
    const std::regex re(t + "[.-]", std::regex::icase);
    for (const auto& f : files)
      if (is_model_file(f.path) && first_part(f) && std::regex_search(f.path, re)) return &f;
  }
  if (tag.empty())
    for (const auto& f : files)
      if (is_model_file(f.path) && first_part(f)) return &f;
  return nullptr;
}

std::string available(const std::vector<RepoFile>& files) {
  std::string out;
  for (const auto& f : files)
    if (f.path.size() > 5 && f.path.compare(f.path.size() - 5, 5, ".gguf") == 0) out += (out.empty() ? "" : ", ") + f.path;
  return out.empty() ? "none" : out;
}

nlohmann::json api_get(const std::string& url, const DownloadOptions& o) {
  const size_t path_at = url.find('/', url.find("://") + 3);
  httplib::Client cli(url.substr(0, path_at));
  cli.set_follow_location(true);
  cli.set_connection_timeout(15, 0);
  httplib::Headers h = {{"User-Agent", "oscar.cpp"}};
  if (!o.token.empty()) h.emplace("Authorization", "Bearer " + o.token);
  auto res = cli.Get(url.substr(path_at), h);
  if (!res) throw Error("cannot reach " + url + ": " + httplib::to_string(res.error()));
  if (res->status != 200) throw Error("GET " + url + ": HTTP " + std::to_string(res->status));
  try {
    return nlohmann::json::parse(res->body);
  } catch (const nlohmann::json::exception& e) {
    throw Error("GET " + url + ": not JSON: " + e.what());
  }
}

bool is_hex(const std::string& s, size_t n) {
  return s.size() == n && std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit((unsigned char)c); });
}

// A repository path must stay inside the snapshot folder.
bool safe_relative(const std::string& p) {
  if (p.empty() || p[0] == '/') return false;
  for (const auto& part : fs::path(p))
    if (part == "..") return false;
  return true;
}

std::string read_first_line(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

// The main branch's commit and files, from the server; writes refs/main.
std::pair<std::string, std::vector<RepoFile>> list_online(const std::string& repo, const fs::path& repo_dir,
                                                          const DownloadOptions& o) {
  const nlohmann::json refs = api_get(o.endpoint + "api/models/" + repo + "/refs", o);
  std::string commit;
  if (refs.contains("branches") && refs["branches"].is_array())
    for (const auto& b : refs["branches"])
      if (b.value("name", "") == "main" || commit.empty())
        if (b.contains("targetCommit") && b["targetCommit"].is_string() && is_hex(b["targetCommit"], 40))
          commit = b["targetCommit"].get<std::string>();
  if (commit.empty()) throw Error("-hf " + repo + ": the server lists no branch with a valid commit");
  fs::create_directories(repo_dir / "refs");
  std::ofstream(repo_dir / "refs" / "main") << commit;
  const nlohmann::json tree = api_get(o.endpoint + "api/models/" + repo + "/tree/" + commit + "?recursive=true", o);
  std::vector<RepoFile> files;
  if (tree.is_array())
    for (const auto& it : tree) {
      if (!it.is_object() || it.value("type", "") != "file" || !it.contains("path") || !it["path"].is_string()) continue;
      RepoFile f{it["path"].get<std::string>(), ""};
      if (!safe_relative(f.path)) continue;
      if (it.contains("lfs") && it["lfs"].is_object() && it["lfs"].contains("oid") && it["lfs"]["oid"].is_string() &&
          is_hex(it["lfs"]["oid"], 64))
        f.sha256 = it["lfs"]["oid"].get<std::string>();
      files.push_back(f);
    }
  return {commit, files};
}

// The same from the cache: refs/main and the files of that snapshot.
std::pair<std::string, std::vector<RepoFile>> list_cached(const fs::path& repo_dir) {
  const std::string commit = read_first_line(repo_dir / "refs" / "main");
  std::vector<RepoFile> files;
  const fs::path snap = repo_dir / "snapshots" / commit;
  std::error_code ec;
  if (commit.empty() || !fs::is_directory(snap, ec)) return {commit, files};
  for (auto it = fs::recursive_directory_iterator(snap, ec); it != fs::recursive_directory_iterator(); ++it)
    if (fs::is_regular_file(it->path(), ec)) files.push_back({it->path().lexically_relative(snap).generic_string(), ""});
  std::sort(files.begin(), files.end(), [](const RepoFile& a, const RepoFile& b) { return a.path < b.path; });
  return {commit, files};
}

// Downloads one repository file into blobs/ and links it from the snapshot.
std::string fetch_one(const std::string& repo, const std::string& commit, const RepoFile& f, const fs::path& repo_dir,
                      const DownloadOptions& o) {
  const fs::path final_path = repo_dir / "snapshots" / commit / f.path;
  std::error_code ec;
  if (fs::exists(final_path, ec)) return final_path.string();
  const std::string url = o.endpoint + repo + "/resolve/" + commit + "/" + f.path;
  if (f.sha256.empty()) {  // no blob name to use: store in the snapshot itself
    download_file(url, final_path.string(), o);
    return final_path.string();
  }
  const fs::path blob = repo_dir / "blobs" / f.sha256;
  download_file(url, blob.string(), o, f.sha256);
  fs::create_directories(final_path.parent_path(), ec);
  fs::create_symlink(fs::relative(blob, final_path.parent_path()), final_path, ec);
  if (ec) fs::copy_file(blob, final_path, ec);  // file systems without symlinks
  if (ec) throw Error("cannot place '" + final_path.string() + "': " + ec.message());
  return final_path.string();
}

}  // namespace

std::string fetch_hf_model(const std::string& repo_and_quant, const std::string& hf_file, const CacheDirs& dirs,
                           const DownloadOptions& o, const Logger& log) {
  const size_t colon = repo_and_quant.find(':');
  const std::string repo = repo_and_quant.substr(0, colon);
  const std::string tag = colon == std::string::npos ? "" : repo_and_quant.substr(colon + 1);
  const size_t slash = repo.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == repo.size() || repo.find('/', slash + 1) != std::string::npos ||
      repo.find("..") != std::string::npos)
    throw Error("-hf: expected <user>/<model>[:quant], got '" + repo_and_quant + "'");
  const std::string folder = "models--" + repo.substr(0, slash) + "--" + repo.substr(slash + 1);
  const fs::path repo_dir = fs::path(dirs.hf_hub) / folder;

  std::pair<std::string, std::vector<RepoFile>> listing;
  bool online = false;
  if (!o.offline) {
    try {
      listing = list_online(repo, repo_dir, o);
      online = true;
    } catch (const Error& e) {
      log.warn(std::string(e.what()) + "; looking in the cache");
    }
  }
  if (!online) listing = list_cached(repo_dir);
  const auto& [commit, files] = listing;
  if (files.empty())
    throw Error(std::string(o.offline ? "offline: " : "") + "-hf " + repo + " is not in the cache (looked in '" +
                (repo_dir / "snapshots").string() + "')");

  const RepoFile* primary = nullptr;
  if (!hf_file.empty()) {
    for (const auto& f : files)
      if (f.path == hf_file) primary = &f;
    if (!primary)
      throw Error("-hf " + repo + ": no file '" + hf_file + "' (" + (online ? "in the repository" : "in the cache") +
                  "; GGUF files: " + available(files) + ")");
  } else {
    primary = pick_model(files, tag);
    if (!primary)
      throw Error("-hf " + repo_and_quant + ": no GGUF model file" + (tag.empty() ? "" : " for quant " + tag) + " (" +
                  (online ? "in the repository" : "in the cache") + "; GGUF files: " + available(files) + ")");
  }
  // A split model: every part, the first one is what the loader opens.
  const SplitInfo sp = split_info(primary->path);
  std::string first;
  for (const auto& f : files) {
    const SplitInfo fi = split_info(f.path);
    if (&f != primary && !(sp.count > 1 && fi.count == sp.count && fi.prefix == sp.prefix)) continue;
    const std::string local = online ? fetch_one(repo, commit, f, repo_dir, o)
                                     : (repo_dir / "snapshots" / commit / f.path).string();
    if (&f == primary) first = local;
  }
  log.info("-hf " + repo_and_quant + ": " + first);
  return first;
}

std::vector<std::string> list_cached_models() {
  std::vector<std::string> out;
  const CacheDirs d = cache_dirs(nullptr);
  std::error_code ec;
  if (fs::is_directory(d.hf_hub, ec))
    for (const auto& repo : fs::directory_iterator(d.hf_hub, ec)) {
      const std::string name = repo.path().filename().string();
      if (name.rfind("models--", 0) != 0) continue;
      std::string id = name.substr(8);
      const size_t sep = id.find("--");
      if (sep != std::string::npos) id = id.substr(0, sep) + "/" + id.substr(sep + 2);
      for (const auto& f : list_cached(repo.path()).second)
        if (is_model_file(f.path)) out.push_back(id + ":" + f.path);
    }
  if (fs::is_directory(d.llama, ec))
    for (const auto& f : fs::directory_iterator(d.llama, ec))
      if (f.path().extension() == ".gguf") out.push_back(f.path().string());
  return out;
}

}  // namespace oscar::tools
