// A byte stream to one Redis server on the executor's io_context: plain TCP for redis://, TLS
// (asio::ssl over OpenSSL, the server's certificate verified) for rediss://. The connection
// (connection.h) speaks RESP over either without knowing which.
#ifndef DLOCK_SRC_BACKENDS_REDIS_STREAM_H_
#define DLOCK_SRC_BACKENDS_REDIS_STREAM_H_

#include <asio/buffer.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <functional>
#include <memory>
#include <string>
#include <system_error>

namespace dlock::redis_backend {

struct TlsOptions {
  std::string ca_file;      // PEM certificates to trust; empty: the system's store
  std::string server_name;  // checked against the certificate (a host name or an IP address)
};

// Thread safety: none; used on the io_context's thread only.
class Stream : public std::enable_shared_from_this<Stream> {
 public:
  using Done = std::function<void(std::error_code)>;
  using Transferred = std::function<void(std::error_code, std::size_t)>;
  virtual ~Stream() = default;

  // Connects to the first endpoint that accepts, then (TLS) completes the handshake.
  virtual void connect(const asio::ip::tcp::resolver::results_type& endpoints, Done done) = 0;
  // Writes all of `bytes`, which must stay valid until `done` runs.
  virtual void write(asio::const_buffer bytes, Transferred done) = 0;
  virtual void read_some(asio::mutable_buffer into, Transferred done) = 0;
  // Ends the stream; operations in flight complete with operation_aborted. Handlers keep the
  // stream alive until they have run.
  virtual void close() noexcept = 0;
};

std::shared_ptr<Stream> make_tcp_stream(asio::io_context& io);
// Throws dlock::Error(invalid_argument) when `options.ca_file` cannot be read.
std::shared_ptr<Stream> make_tls_stream(asio::io_context& io, const TlsOptions& options);

}  // namespace dlock::redis_backend

#endif  // DLOCK_SRC_BACKENDS_REDIS_STREAM_H_
