#include "pg_conninfo.h"

#include <cstdlib>

namespace dlock::postgres_backend {

std::optional<Conninfo> Conninfo::read(const std::string& conninfo, std::string* why) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &error);
  if (options) return Conninfo(options);
  if (why) {
    *why = error ? error : "libpq cannot read it";
    while (!why->empty() && why->back() == '\n') why->pop_back();
  }
  PQfreemem(error);
  return std::nullopt;
}

const PQconninfoOption* Conninfo::find(std::string_view keyword) const {
  for (const PQconninfoOption* option = options_.get(); option->keyword != nullptr; ++option) {
    if (keyword == option->keyword) return option;
  }
  return nullptr;
}

std::optional<std::string> Conninfo::given(std::string_view keyword) const {
  const PQconninfoOption* option = find(keyword);
  if (option == nullptr || option->val == nullptr) return std::nullopt;
  return option->val;
}

std::optional<std::string> Conninfo::value(std::string_view keyword) const {
  const PQconninfoOption* option = find(keyword);
  if (option == nullptr) return std::nullopt;
  if (option->val != nullptr) return option->val;
  const char* variable = option->envvar != nullptr ? std::getenv(option->envvar) : nullptr;
  if (variable == nullptr) return std::nullopt;
  return variable;
}

}  // namespace dlock::postgres_backend
