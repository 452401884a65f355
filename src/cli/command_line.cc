#include "command_line.h"

#include <string_view>

namespace dlock::cli {

namespace {

bool is_option(std::string_view word) { return word.size() > 1 && word.front() == '-'; }

// Whether `word`, an option of `app`, takes its value from the next word: "--wait 5s" does,
// "--wait=5s" and "-w5s" do not, nor do flags. In a cluster of short options ("-nw") the first
// that takes a value takes the rest of the cluster, or the next word if nothing is left.
bool takes_next_word(const CLI::App& app, std::string_view word) {
  const auto takes_value = [&](const std::string& name) {
    const CLI::Option* option = app.get_option_no_throw(name);
    return option != nullptr && option->get_items_expected_min() > 0;
  };
  if (word.starts_with("--")) {
    return word.find('=') == std::string_view::npos && takes_value(std::string(word));
  }
  for (std::size_t i = 1; i < word.size(); ++i) {
    if (takes_value(std::string("-") + word[i])) return i + 1 == word.size();
  }
  return false;
}

}  // namespace

CommandLine split_command_line(const CLI::App& app, const CLI::App& run, int argc,
                               const char* const* argv) {
  CommandLine line;
  int i = 0;
  const auto keep = [&] { line.own.emplace_back(argv[i++]); };
  keep();  // the program's name
  while (i < argc && is_option(argv[i]) && std::string_view(argv[i]) != "--") {
    const bool value_follows = takes_next_word(app, argv[i]);
    keep();
    if (value_follows && i < argc) keep();
  }
  if (i == argc || std::string_view(argv[i]) == "--") {
    while (i < argc) keep();
    return line;
  }
  const std::string subcommand = argv[i];
  if (app.get_subcommands([&](const CLI::App* s) { return s->get_name() == subcommand; }).empty()) {
    line.unknown_subcommand = subcommand;
  }
  if (subcommand != run.get_name()) {
    while (i < argc) keep();
    return line;
  }
  keep();
  bool named = false;
  while (i < argc) {
    const std::string_view word = argv[i];
    if (word == "--") {
      ++i;
      if (named) break;
      // A name that starts with '-' follows: CLI11 reads it as a positional after "--".
      line.own.emplace_back("--");
      if (i < argc) keep();
      named = true;
      break;
    }
    if (is_option(word)) {
      // `run` falls through to `app`, so dlock's own options (--backend URL) may come here too.
      const bool value_follows = takes_next_word(run, word) || takes_next_word(app, word);
      keep();
      if (value_follows && i < argc) keep();
    } else if (!named) {
      keep();
      named = true;
    } else {
      break;
    }
  }
  line.command.assign(argv + i, argv + argc);
  return line;
}

}  // namespace dlock::cli
