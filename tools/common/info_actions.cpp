#include "info_actions.h"

#include <cstdio>
#include <set>
#include <sstream>

#include "download.h"

namespace oscar::tools {

namespace {

// Every "-x" / "--xyz" word at the start of a --help line, for completion.
std::string flags_in_help(const std::string& help) {
  std::set<std::string> words;
  std::istringstream lines(help);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream ws(line);
    std::string w;
    while (ws >> w && w[0] == '-') {
      if (w.back() == ',') w.pop_back();
      words.insert(w);
    }
  }
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

}  // namespace

int run_info_action(const std::string& action, const std::string& tool, const std::string& help) {
  if (action == "version") {
    std::printf("%s (oscar.cpp), built %s %s\n", tool.c_str(), __DATE__, __TIME__);
  } else if (action == "license") {
    std::printf("oscar.cpp: see the repository's README for provenance and licenses.\n"
                "Dependencies: cpp-httplib (MIT), nlohmann/json (MIT), OpenSSL (Apache-2.0), PCRE2 (BSD),\n"
                "utf8proc (MIT).\n");
  } else if (action == "list-devices") {
    std::printf("Available devices:\n  (none: %s computes on the CPU only)\n", tool.c_str());
  } else if (action == "cache-list") {
    const auto models = list_cached_models();
    std::printf("number of models in cache: %zu\n", models.size());
    for (size_t i = 0; i < models.size(); ++i) std::printf("%5zu. %s\n", i + 1, models[i].c_str());
  } else if (action == "completion-bash") {
    std::printf("_%s_completions() {\n"
                "  COMPREPLY=( $(compgen -W \"%s\" -- \"${COMP_WORDS[COMP_CWORD]}\") )\n"
                "}\n"
                "complete -o default -F _%s_completions %s\n",
                tool == "oscar-server" ? "oscar_server" : "oscar_tool", flags_in_help(help).c_str(),
                tool == "oscar-server" ? "oscar_server" : "oscar_tool", tool.c_str());
  } else {
    return 1;
  }
  return 0;
}

}  // namespace oscar::tools
