#include "stream.h"

#include <sys/socket.h>
#include <unistd.h>

#include <asio/post.hpp>
#include <asio/ssl.hpp>
#include <asio/write.hpp>
#include <cerrno>

#include <dlock/error.h>

namespace dlock::net {

class TlsContext {
 public:
  explicit TlsContext(const TlsConfig& config) : context(asio::ssl::context::tls_client) {
    context.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                        asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                        asio::ssl::context::no_tlsv1_1);
    std::error_code ec;
    if (config.ca_file.empty()) {
      context.set_default_verify_paths(ec);
    } else {
      context.load_verify_file(config.ca_file, ec);
    }
    if (ec) fail("CA certificates '" + config.ca_file + "'", ec);
    if (config.cert_file.empty() && !config.key_file.empty()) {
      throw Error(errc::invalid_argument, "TLS client key '" + config.key_file +
                                              "' without a client certificate to go with it");
    }
    if (!config.cert_file.empty()) {
      context.use_certificate_chain_file(config.cert_file, ec);
      if (ec) fail("client certificate '" + config.cert_file + "'", ec);
      // Without a file of its own, the key is looked for beside the certificate, in its file.
      const std::string& key_file = config.key_file.empty() ? config.cert_file : config.key_file;
      context.use_private_key_file(key_file, asio::ssl::context::pem, ec);
      if (ec) fail("client key '" + key_file + "'", ec);
    }
  }

  asio::ssl::context context;

 private:
  [[noreturn]] static void fail(const std::string& what, std::error_code ec) {
    throw Error(errc::invalid_argument, "TLS " + what + ": " + ec.message());
  }
};

namespace {

// Connects `socket` to the first of `endpoints`, from `index` on, that accepts, as
// asio::async_connect does, but opens each socket itself with SOCK_CLOEXEC: asio opens them
// without, so every program the process went on to exec would hold the connection open, and
// with it what a server ties to a connection (a MySQL named lock), after we closed ours.
// `done` must keep the socket's and the endpoints' owner alive.
void connect_in_turn(asio::basic_socket<asio::ip::tcp>& socket,
                     const std::vector<asio::ip::tcp::endpoint>& endpoints, std::size_t index,
                     std::error_code last, Stream::Done done) {
  for (; index < endpoints.size(); ++index) {
    const asio::ip::tcp::endpoint& endpoint = endpoints[index];
    std::error_code ignored;
    socket.close(ignored);
    const int fd = ::socket(endpoint.protocol().family(), SOCK_STREAM | SOCK_CLOEXEC,
                            endpoint.protocol().protocol());
    if (fd < 0) {
      last = std::error_code(errno, std::system_category());
      continue;
    }
    socket.assign(endpoint.protocol(), fd, last);
    if (last) {
      ::close(fd);
      continue;
    }
    socket.async_connect(
        endpoint, [&socket, &endpoints, index, done = std::move(done)](std::error_code ec) mutable {
          if (!ec) return done(ec);
          // Closed meanwhile (its failure may have been on its way already): no other socket.
          if (!socket.is_open()) return done(make_error_code(asio::error::operation_aborted));
          connect_in_turn(socket, endpoints, index + 1, ec, std::move(done));
        });
    return;
  }
  // Never from within connect(), as asio's own completions: the caller may not expect it.
  asio::post(
      socket.get_executor(),
      [done = std::move(done),
       ec = last ? last : make_error_code(asio::error::host_not_found)]() mutable { done(ec); });
}

class TcpStream final : public Stream {
 public:
  explicit TcpStream(asio::io_context& io) : socket_(io) {}

  void connect(std::vector<asio::ip::tcp::endpoint> endpoints, const std::string&,
               Done done) override {
    endpoints_ = std::move(endpoints);
    connect_in_turn(socket_, endpoints_, 0, {},
                    [self = shared_from_this(), this, done = std::move(done)](std::error_code ec) {
                      if (!ec) socket_.set_option(asio::ip::tcp::no_delay(true), ec);
                      done(ec);
                    });
  }
  void write(asio::const_buffer bytes, Transferred done) override {
    asio::async_write(socket_, bytes,
                      [self = shared_from_this(), done](auto ec, auto n) { done(ec, n); });
  }
  void read_some(asio::mutable_buffer into, Transferred done) override {
    socket_.async_read_some(into,
                            [self = shared_from_this(), done](auto ec, auto n) { done(ec, n); });
  }
  void close() noexcept override {
    std::error_code ignored;
    socket_.close(ignored);
  }
  void reset_on_close() noexcept override {
    std::error_code ignored;
    socket_.set_option(asio::socket_base::linger(true, 0), ignored);
  }

 private:
  std::vector<asio::ip::tcp::endpoint> endpoints_;  // tried in turn by the connect in flight
  asio::ip::tcp::socket socket_;
};

class TlsStream final : public Stream {
 public:
  TlsStream(asio::io_context& io, std::shared_ptr<TlsContext> tls)
      : tls_(std::move(tls)), stream_(io, tls_->context) {}

  void connect(std::vector<asio::ip::tcp::endpoint> endpoints, const std::string& server_name,
               Done done) override {
    endpoints_ = std::move(endpoints);
    stream_.set_verify_mode(asio::ssl::verify_peer);
    stream_.set_verify_callback(asio::ssl::host_name_verification(server_name));
    std::error_code ec;
    asio::ip::make_address(server_name, ec);
    // SNI names hosts, never addresses.
    if (ec) SSL_set_tlsext_host_name(stream_.native_handle(), server_name.c_str());
    connect_in_turn(stream_.lowest_layer(), endpoints_, 0, {},
                    [self = shared_from_this(), this, done = std::move(done)](std::error_code ec) {
                      if (ec) return done(ec);
                      stream_.lowest_layer().set_option(asio::ip::tcp::no_delay(true), ec);
                      stream_.async_handshake(asio::ssl::stream_base::client,
                                              [self, done](std::error_code ec) { done(ec); });
                    });
  }
  void write(asio::const_buffer bytes, Transferred done) override {
    asio::async_write(stream_, bytes,
                      [self = shared_from_this(), done](auto ec, auto n) { done(ec, n); });
  }
  void read_some(asio::mutable_buffer into, Transferred done) override {
    stream_.async_read_some(into,
                            [self = shared_from_this(), done](auto ec, auto n) { done(ec, n); });
  }
  void close() noexcept override {
    std::error_code ignored;
    stream_.lowest_layer().close(ignored);
  }
  void reset_on_close() noexcept override {
    std::error_code ignored;
    stream_.lowest_layer().set_option(asio::socket_base::linger(true, 0), ignored);
  }

 private:
  std::shared_ptr<TlsContext> tls_;
  std::vector<asio::ip::tcp::endpoint> endpoints_;
  asio::ssl::stream<asio::ip::tcp::socket> stream_;
};

}  // namespace

std::shared_ptr<TlsContext> make_tls_context(const TlsConfig& config) {
  if (!config.enabled) return nullptr;
  return std::make_shared<TlsContext>(config);
}

std::string describe_connect_failure(std::error_code ec) {
  if (ec == asio::ssl::error::stream_truncated) {
    return "TLS handshake failed: the server closed the connection (is it the server's TLS "
           "port?)";
  }
  if (ec.category() == asio::error::get_ssl_category()) {
    return "TLS handshake failed: " + ec.message();
  }
  return ec.message();
}

std::shared_ptr<Stream> make_stream(asio::io_context& io, const std::shared_ptr<TlsContext>& tls) {
  if (tls) return std::make_shared<TlsStream>(io, tls);
  return std::make_shared<TcpStream>(io);
}

}  // namespace dlock::net
