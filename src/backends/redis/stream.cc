#include "stream.h"

#include <asio/connect.hpp>
#include <asio/ssl.hpp>
#include <asio/write.hpp>

#include <dlock/error.h>

namespace dlock::redis_backend {

namespace {

class TcpStream final : public Stream {
 public:
  explicit TcpStream(asio::io_context& io) : socket_(io) {}

  void connect(const asio::ip::tcp::resolver::results_type& endpoints, Done done) override {
    asio::async_connect(
        socket_, endpoints,
        [self = shared_from_this(), this, done = std::move(done)](std::error_code ec, const auto&) {
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

 private:
  asio::ip::tcp::socket socket_;
};

class TlsStream final : public Stream {
 public:
  TlsStream(asio::io_context& io, const TlsOptions& options)
      : context_(make_context(options)), stream_(io, context_) {
    stream_.set_verify_mode(asio::ssl::verify_peer);
    stream_.set_verify_callback(asio::ssl::host_name_verification(options.server_name));
    std::error_code ec;
    asio::ip::make_address(options.server_name, ec);
    // SNI names hosts, never addresses.
    if (ec) SSL_set_tlsext_host_name(stream_.native_handle(), options.server_name.c_str());
  }

  void connect(const asio::ip::tcp::resolver::results_type& endpoints, Done done) override {
    asio::async_connect(
        stream_.lowest_layer(), endpoints,
        [self = shared_from_this(), this, done = std::move(done)](std::error_code ec, const auto&) {
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

 private:
  static asio::ssl::context make_context(const TlsOptions& options) {
    asio::ssl::context context(asio::ssl::context::tls_client);
    context.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                        asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                        asio::ssl::context::no_tlsv1_1);
    std::error_code ec;
    if (options.ca_file.empty()) {
      context.set_default_verify_paths(ec);
    } else {
      context.load_verify_file(options.ca_file, ec);
    }
    if (ec) {
      throw Error(errc::invalid_argument,
                  "TLS certificates '" + options.ca_file + "': " + ec.message());
    }
    return context;
  }

  asio::ssl::context context_;
  asio::ssl::stream<asio::ip::tcp::socket> stream_;
};

}  // namespace

std::shared_ptr<Stream> make_tcp_stream(asio::io_context& io) {
  return std::make_shared<TcpStream>(io);
}

std::shared_ptr<Stream> make_tls_stream(asio::io_context& io, const TlsOptions& options) {
  return std::make_shared<TlsStream>(io, options);
}

}  // namespace dlock::redis_backend
