// libpq's own reading of a connection string or URI, for the settings dlock checks before it
// connects: libpq reports a bad one only as a failure to connect, once a server has answered.
#ifndef DLOCK_SRC_BACKENDS_POSTGRES_PG_CONNINFO_H_
#define DLOCK_SRC_BACKENDS_POSTGRES_PG_CONNINFO_H_

#include <libpq-fe.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace dlock::postgres_backend {

// Thread safety: const methods may be called from any thread.
class Conninfo {
 public:
  // Reads `conninfo` (key=value pairs or a postgres:// URI) with PQconninfoParse. nullopt
  // when libpq cannot read it; then `*why`, if given, holds libpq's reason.
  static std::optional<Conninfo> read(const std::string& conninfo, std::string* why = nullptr);

  // The value `conninfo` gives `keyword` ("sslmode", "port"...), if it gives one.
  std::optional<std::string> given(std::string_view keyword) const;

  // The value libpq would use: the given one, else the one in the keyword's environment
  // variable (PGSSLMODE for sslmode), which PQconninfoParse leaves out.
  std::optional<std::string> value(std::string_view keyword) const;

 private:
  struct Free {
    void operator()(PQconninfoOption* options) const { PQconninfoFree(options); }
  };

  explicit Conninfo(PQconninfoOption* options) : options_(options) {}

  const PQconninfoOption* find(std::string_view keyword) const;

  std::unique_ptr<PQconninfoOption, Free> options_;
};

}  // namespace dlock::postgres_backend

#endif  // DLOCK_SRC_BACKENDS_POSTGRES_PG_CONNINFO_H_
