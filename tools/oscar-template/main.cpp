// oscar-template: renders every case of a cases file (the format of
// testdata/templates/cases.json) with one chat template and prints the
// results as JSON in the format of expected.json:
//   { "<template file name>": { "<case id>": "<rendered>" | {"error": "..."} } }
//
//   oscar-template --template FILE --cases CASES.json [--bos S] [--eos S]
//                  [--now "YYYY-MM-DD HH:MM:SS"]
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"

namespace {

using oscar::chat::ChatTemplate;
using oscar::chat::ChatTemplateOptions;
using oscar::chat::TemplateError;
using ojson = nlohmann::ordered_json;

void usage() {
  std::fprintf(stderr,
               "usage: oscar-template --template FILE --cases CASES.json [--bos S] [--eos S] [--now DATETIME]\n"
               "  renders every case with the template and prints JSON like expected.json;\n"
               "  --now fixes strftime_now (default 2026-01-02 03:04:05, as in testdata/templates;\n"
               "  'system' uses the clock)\n");
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

int main(int argc, char** argv) {
  std::string template_path, cases_path, bos, eos, now = "2026-01-02 03:04:05";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--template") template_path = value();
    else if (a == "--cases") cases_path = value();
    else if (a == "--bos") bos = value();
    else if (a == "--eos") eos = value();
    else if (a == "--now") now = value();
    else if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else {
      std::fprintf(stderr, "unknown argument: %s\n", a.c_str());
      usage();
      return 2;
    }
  }
  if (template_path.empty() || cases_path.empty()) {
    usage();
    return 2;
  }
  try {
    ChatTemplateOptions opt;
    if (now != "system") {
      std::tm tm{};
      if (std::sscanf(now.c_str(), "%d-%d-%d %d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                      &tm.tm_min, &tm.tm_sec) != 6)
        throw std::runtime_error("--now must be 'YYYY-MM-DD HH:MM:SS' or 'system'");
      tm.tm_year -= 1900;
      tm.tm_mon -= 1;
      std::mktime(&tm);  // fills in the weekday and day of the year
      opt.now = [tm] { return tm; };
    }
    const ChatTemplate tmpl(read_file(template_path), bos, eos, opt);
    const ojson cases = ojson::parse(read_file(cases_path));
    if (!cases.is_array()) throw std::runtime_error(cases_path + ": expected a JSON array of cases");
    ojson results = ojson::object();
    for (const auto& c : cases) {
      ojson ctx = ojson::object();
      if (c.contains("extra") && c["extra"].is_object())
        for (auto it = c["extra"].begin(); it != c["extra"].end(); ++it) ctx[it.key()] = it.value();
      for (const char* key : {"messages", "tools", "documents", "add_generation_prompt"})
        if (c.contains(key)) ctx[key] = c[key];
      const std::string id = c.value("id", std::to_string(results.size()));
      try {
        results[id] = tmpl.render(ctx);
      } catch (const TemplateError& e) {
        results[id] = ojson{{"error", e.what()}};
      }
    }
    ojson out = ojson::object();
    out[base_name(template_path)] = std::move(results);
    std::cout << out.dump(1, ' ', true) << "\n";
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oscar-template: %s\n", e.what());
    return 1;
  }
  return 0;
}
