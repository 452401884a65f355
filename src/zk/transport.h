// A byte stream to one ZooKeeper server on the executor's io_context: plain TCP for zk://, TLS
// (asio::ssl over OpenSSL) for zks://, where the server's certificate is verified against the
// configured CA file and the host name, and a client certificate is presented if configured.
#ifndef DLOCK_SRC_ZK_TRANSPORT_H_
#define DLOCK_SRC_ZK_TRANSPORT_H_

#include <asio/buffer.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <functional>
#include <memory>
#include <string>
#include <system_error>

namespace dlock::zk {

struct TlsConfig {
  bool enabled = false;
  std::string ca_file{};    // PEM certificates to trust; empty: the system's store
  std::string cert_file{};  // PEM client certificate; empty: none
  std::string key_file{};   // PEM key of cert_file
};

// Thread safety: none; used on the io_context's thread only.
class Transport : public std::enable_shared_from_this<Transport> {
 public:
  using Done = std::function<void(std::error_code)>;
  using Transferred = std::function<void(std::error_code, std::size_t)>;
  virtual ~Transport() = default;

  // Connects to `endpoint`, then (TLS) completes the handshake, verifying `server_name`.
  virtual void connect(const asio::ip::tcp::endpoint& endpoint, const std::string& server_name,
                       Done done) = 0;
  // Writes all of `bytes`, which must stay valid until `done` runs.
  virtual void write(asio::const_buffer bytes, Transferred done) = 0;
  virtual void read_some(asio::mutable_buffer into, Transferred done) = 0;
  // Ends the stream; operations in flight complete with operation_aborted. Handlers keep the
  // transport alive until they have run.
  virtual void close() noexcept = 0;
};

// Loads the TLS files once per client. Throws dlock::Error(invalid_argument) when a file cannot
// be read or the key does not match the certificate.
class TlsContext;
std::shared_ptr<TlsContext> make_tls_context(const TlsConfig& config);

std::shared_ptr<Transport> make_transport(asio::io_context& io,
                                          const std::shared_ptr<TlsContext>& tls);

}  // namespace dlock::zk

#endif  // DLOCK_SRC_ZK_TRANSPORT_H_
