// A byte stream to one server on the executor's io_context, for the backends that speak their
// protocol themselves (ZooKeeper's jute, Redis's RESP): plain TCP, or TLS (asio::ssl over
// OpenSSL) where the server's certificate is verified against the configured CA file and the
// host name, and a client certificate is presented if configured. The protocol above it does
// not know which.
#ifndef DLOCK_SRC_NET_STREAM_H_
#define DLOCK_SRC_NET_STREAM_H_

#include <asio/buffer.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

namespace dlock::net {

struct TlsConfig {
  bool enabled = false;
  std::string ca_file{};    // PEM certificates to trust; empty: the system's store
  std::string cert_file{};  // PEM client certificate; empty: none
  std::string key_file{};   // PEM key of cert_file
};

// Thread safety: none; used on the io_context's thread only.
class Stream : public std::enable_shared_from_this<Stream> {
 public:
  using Done = std::function<void(std::error_code)>;
  using Transferred = std::function<void(std::error_code, std::size_t)>;
  virtual ~Stream() = default;

  // Connects to the first of `endpoints` that accepts, then (TLS) completes the handshake,
  // verifying `server_name` (a host name or an IP address) against the certificate.
  virtual void connect(std::vector<asio::ip::tcp::endpoint> endpoints,
                       const std::string& server_name, Done done) = 0;
  // Writes all of `bytes`, which must stay valid until `done` runs.
  virtual void write(asio::const_buffer bytes, Transferred done) = 0;
  virtual void read_some(asio::mutable_buffer into, Transferred done) = 0;
  // Ends the stream; operations in flight complete with operation_aborted. Handlers keep the
  // stream alive until they have run.
  virtual void close() noexcept = 0;
  // close(), with a reset (SO_LINGER 0): what the kernel still holds to send is dropped, not
  // delivered should a broken network come back, when the requests it carries have been
  // given up.
  void abort() noexcept {
    reset_on_close();
    close();
  }

 private:
  virtual void reset_on_close() noexcept = 0;
};

// The TLS files, loaded once for the streams of a client; nullptr if `config` is not enabled.
// Throws dlock::Error(invalid_argument) when a file cannot be read or the key does not match
// the certificate.
class TlsContext;
std::shared_ptr<TlsContext> make_tls_context(const TlsConfig& config);

// What an error of Stream::connect() means, for a person: the system's word for a refused or
// unreachable host; for TLS, "TLS handshake failed: " and OpenSSL's, or a hint where the server
// hung up on our hello, as a port that does not speak TLS does.
std::string describe_connect_failure(std::error_code ec);

// A TLS stream if `tls` is set, else a TCP stream.
std::shared_ptr<Stream> make_stream(asio::io_context& io, const std::shared_ptr<TlsContext>& tls);

}  // namespace dlock::net

#endif  // DLOCK_SRC_NET_STREAM_H_
