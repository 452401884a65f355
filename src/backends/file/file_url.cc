// file: URLs, and the registry entry of the local file backend.
#include <dlock/error.h>
#include <dlock/file.h>

#include "core/backend_registry.h"
#include "core/url.h"

namespace dlock::detail {

namespace {

std::shared_ptr<dlock::Backend> open_file(std::string_view url, std::string_view rest) {
  check_no_stray_characters(url, url);
  // "file:" and "file://" are the default directory; "file:///dir" and "file:/dir" name one.
  if (rest.starts_with("//")) {
    rest.remove_prefix(2);
    const std::size_t slash = rest.find('/');
    const std::string_view host = rest.substr(0, slash);
    if (!host.empty() && host != "localhost") {
      bad_url(url, "a file URL names a directory of this host: file:///path");
    }
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  }
  if (rest.find('?') != std::string_view::npos) bad_url(url, "file URLs take no options");
  if (!rest.empty() && rest.front() != '/') bad_url(url, "the directory must be absolute");
  std::string directory = percent_decode(url, rest);
  check_no_stray_characters(url, directory);
  return file::Backend::open({.directory = std::move(directory)});
}

}  // namespace

void register_file(BackendRegistry& registry) {
  registry.add({.schemes = {"file"},
                .url_form = "file: or file:///path/to/dir",
                .open = [](std::string_view url, const OpenOptions&) {
                  return open_file(url, split_scheme(url).rest);
                }});
}

}  // namespace dlock::detail
