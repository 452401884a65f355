// Backend URLs: every password a URL holds is hidden in messages, in the URL and in what a
// parser (dlock's or libpq's) says about it; a port out of range is a bad URL.
#include "core/url.h"

#include <gtest/gtest.h>

#include <string>

#include <dlock/dlock.h>

namespace dlock::detail {
namespace {

// What dlock::open(url) throws, which must be invalid_argument: a bad URL, refused before any
// connection is tried.
std::string bad_url_message(const std::string& url) {
  try {
    dlock::open(url);
    ADD_FAILURE() << url << " opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
    return e.what();
  }
  return {};
}

TEST(Redacted, HidesEveryPasswordAUrlHolds) {
  EXPECT_EQ(redacted("zk://alice:s3cret@h:2181/x"), "zk://alice:***@h:2181/x");
  EXPECT_EQ(redacted("redis://:s3cret@h:6379/0"), "redis://:***@h:6379/0");
  EXPECT_EQ(redacted("postgresql://u@h/db?sslmode=require&password=s3cret&x=1"),
            "postgresql://u@h/db?sslmode=require&password=***&x=1");
  EXPECT_EQ(redacted("postgres:host=h password=s3cret bogus=1"),
            "postgres:host=h password=*** bogus=1");
  EXPECT_EQ(redacted("postgres:password = 'a b\\'c' host=h"), "postgres:password = *** host=h");
  EXPECT_EQ(redacted("postgres:host=h\tpassword=ab&cd sslpassword=k"),
            "postgres:host=h\tpassword=*** sslpassword=***");
  // Only the password itself, not the same text elsewhere.
  EXPECT_EQ(redacted("postgres://postgres:postgres@h/db"), "postgres://postgres:***@h/db");
  EXPECT_EQ(redacted("redis://:1@127.0.0.1:6379/1"), "redis://:***@127.0.0.1:6379/1");
  EXPECT_EQ(redacted("zk://h:2181/x"), "zk://h:2181/x");
  EXPECT_EQ(redacted("file:///tmp/passwords"), "file:///tmp/passwords");
}

// A password with a '/', '?', '#' or '@' that is not percent-encoded ends the authority early
// (or, for libpq, at its first '@'): the parsers then quote pieces of it as a database, a port
// or a host.
TEST(Redacted, HidesAPasswordThatSplitTheUrlAndEachOfItsPieces) {
  EXPECT_EQ(redacted("redis://default:Se/cret@h:6379"), "redis://default:***@h:6379");
  EXPECT_EQ(redacted("backend URL: database 'cret@h:6379' is not a number",
                     "redis://default:Se/cret@h:6379"),
            "backend URL: database '***@h:6379' is not a number");
  EXPECT_EQ(redacted("zk://u:Se?cret@h:2181"), "zk://u:***@h:2181");
  EXPECT_EQ(redacted("could not translate host name \"ss@h\"", "postgres://u:Pa@ss@h/db"),
            "could not translate host name \"***@h\"");
  EXPECT_EQ(redacted("mysql://u:a#b/c@h/db"), "mysql://u:***@h/db");
}

// Every scheme refuses a password that ends the authority early, and quotes none of it; an '@'
// in a path or an option's value is no password.
TEST(Redacted, APasswordThatSplitsTheUrlIsRefusedOnEveryScheme) {
  for (const char* url :
       {"zk://u:TOP/SECRET@127.0.0.1:1", "zks://u:TOP?SECRET@127.0.0.1:1",
        "redis://u:TOP/SECRET@127.0.0.1:1", "redlock://u:TOP#SECRET@127.0.0.1:1,127.0.0.1:2",
        "mysql://u:TOP/SECRET@127.0.0.1:1/db", "postgres://u:TOP?SECRET@127.0.0.1:1/db"}) {
    SCOPED_TRACE(url);
    const std::string message = bad_url_message(url);
    EXPECT_EQ(message.find("TOP"), std::string::npos) << message;
    EXPECT_EQ(message.find("SECRET"), std::string::npos) << message;
    EXPECT_NE(message.find("%2F"), std::string::npos) << message;
  }
  EXPECT_EQ(redacted("zk://h:2181/team@prod?x=1"), "zk://h:2181/team@prod?x=1");
  EXPECT_EQ(redacted("postgres://u@h:5432/db?application_name=a@b"),
            "postgres://u@h:5432/db?application_name=a@b");
  // Found by a second probe: an '@' before the '/' (only the text before it was hidden), a
  // '/' in the user name (the password was quoted as a database), and a password with an '@'
  // in the path behind it (taken for a split one).
  for (const char* url :
       {"zk://usr:TOP@SEC/RET@127.0.0.1:1/ch", "redis://:TOP@SEC?RET@127.0.0.1:1",
        "mysql://u:TOP@SEC:RET/X@127.0.0.1:1/db", "redis://us/er:TOPSECRET@127.0.0.1:1/0"}) {
    SCOPED_TRACE(url);
    const std::string message = bad_url_message(url);
    for (const char* piece : {"TOP", "SEC", "RET"}) {
      EXPECT_EQ(message.find(piece), std::string::npos) << message;
    }
  }
  for (const char* url : {"zk://u:pw@127.0.0.1:1/team@prod?nonsense=1",
                          "mysql://u:pw@127.0.0.1:1/team@prod?nonsense=1"}) {
    SCOPED_TRACE(url);
    const std::string message = bad_url_message(url);
    EXPECT_NE(message.find("nonsense"), std::string::npos) << message;
    EXPECT_NE(message.find("team@prod"), std::string::npos) << message;
  }
}

TEST(Redacted, HidesThePasswordInWhatAParserQuotes) {
  EXPECT_EQ(redacted("invalid percent-encoded token: \"s3cret%zz\"", "postgres://u:s3cret%zz@h/db"),
            "invalid percent-encoded token: \"***\"");
}

// What the probe found: libpq's own messages quoted the URL, or a piece of the password.
TEST(Redacted, BadPostgresUrlsNeverShowTheirPassword) {
  for (const char* url : {"postgres:host=127.0.0.1 port=1 password=TOPSECRET bogus=1",
                          "postgres://postgres:TOPSECRET%zz@127.0.0.1:1/postgres",
                          "postgres://postgres:TOPSECRET@[::1/postgres",
                          "postgres://postgres:TOP@SECRET@127.0.0.1:1/postgres",
                          "postgres://postgres:TOP/SECRET@127.0.0.1:1/postgres"}) {
    const std::string message = bad_url_message(url);
    EXPECT_EQ(message.find("TOP"), std::string::npos) << message;
    EXPECT_EQ(message.find("SECRET"), std::string::npos) << message;
  }
}

// Refused as bad URLs (the dlock command's status 78) before any connection, not tried as
// unreachable servers (69).
TEST(BadUrl, PortsOutside1To65535AreRefusedBeforeConnecting) {
  for (const char* url :
       {"redis://127.0.0.1:0", "redis://127.0.0.1:65536", "postgres://u@127.0.0.1:0/db",
        "postgres://u@127.0.0.1:99999/db", "postgres://u@127.0.0.1:5432:99/db",
        "postgres:host=127.0.0.1 port=0", "postgres://u@h1:5432,h2:0/db",
        "mysql://u@127.0.0.1:0/db", "mysql://u@127.0.0.1:70000/db", "mysql://u@[::1]:0/db"}) {
    bad_url_message(url);
  }
}

// libpq reads connect_timeout as whole seconds and would refuse other text when connecting;
// dlock, which drives the connection itself, refuses it up front rather than ignore it.
TEST(BadUrl, ALibpqConnectTimeoutThatIsNoNumberIsRefused) {
  EXPECT_NE(bad_url_message("postgres:host=127.0.0.1 port=1 connect_timeout=5s")
                .find("whole number of seconds"),
            std::string::npos);
}

// Several hosts in a redis:// URL were looked up as one name ("Host not found", 69).
TEST(BadUrl, SeveralRedisHostsPointToRedlock) {
  EXPECT_NE(bad_url_message("redis://127.0.0.1:6379,127.0.0.1:6380").find("redlock://"),
            std::string::npos);
}

// An IPv6 address is written in brackets, which the host is read without; MySQL passed them to
// the connector as part of the name (found by a hostile probe).
TEST(HostAndPort, AnIpv6AddressIsReadWithoutItsBrackets) {
  const std::string url = "x://[::1]:3307";
  EXPECT_EQ(host_and_port(url, "[::1]:3307", 3306).host, "::1");
  EXPECT_EQ(host_and_port(url, "[::1]:3307", 3306).port, 3307u);
  EXPECT_EQ(host_and_port(url, "[::1]", 3306).port, 3306u);
  EXPECT_EQ(host_and_port(url, "db.example:3307", 3306).host, "db.example");
  for (const char* bad : {"[::1", "[::1]x", "[]:3306", ":3306", "h:", "[::1]:"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(host_and_port(url, bad, 3306), Error);
  }
  EXPECT_NE(bad_url_message("mysql://u@[::1/db").find("closing ']'"), std::string::npos);
}

// ttl= means something only in the SQL table mode; elsewhere it was taken and ignored.
TEST(BadUrl, ATtlOutsideTheTableModeIsRefused) {
  for (const char* url :
       {"postgres://u@127.0.0.1:1/db?ttl=5s", "postgres://u@127.0.0.1:1/db?mode=row&ttl=5s",
        "mysql://u@127.0.0.1:1/db?ttl=5s", "mysql://u@127.0.0.1:1/db?mode=row&ttl=5s"}) {
    SCOPED_TRACE(url);
    EXPECT_NE(bad_url_message(url).find("needs mode=table"), std::string::npos);
  }
}

// Two values for one option: which would win is a guess, so neither does (found by a hostile
// test run: redis://...?ttl=2s&ttl=3s was taken).
TEST(BadUrl, AnOptionGivenTwiceIsRefused) {
  for (const char* url : {"redis://127.0.0.1:1?ttl=2s&ttl=3s",
                          "zk://127.0.0.1:1?session_timeout=5s&session_timeout=6s",
                          "postgres://u@127.0.0.1:1/db?mode=table&mode=row",
                          "mysql://u@127.0.0.1:1/db?ttl=5s&mode=table&ttl=6s"}) {
    SCOPED_TRACE(url);
    EXPECT_NE(bad_url_message(url).find("is given twice"), std::string::npos);
  }
}

// A connect timeout of 0 failed every connection at once as "no answer within 0 ms" (status
// 69, server unavailable) though the server was up (found by a hostile test run).
// The same held for PostgreSQL's and MySQL's URLs, where a table mode's ttl too short to hold
// was refused only once connected (status 69 for a server that did not answer, not 78).
TEST(BadUrl, AConnectTimeoutOfZeroIsRefused) {
  for (const char* url :
       {"redis://127.0.0.1:1?connect_timeout=0", "redis://127.0.0.1:1?connect_timeout=0ms",
        "redlock://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3?connect_timeout=0",
        "postgres://u@127.0.0.1:1/db?connect_timeout=0",
        "mysql://u@127.0.0.1:1/db?connect_timeout=0"}) {
    SCOPED_TRACE(url);
    EXPECT_NE(bad_url_message(url).find("connect_timeout must be more than 0"), std::string::npos);
  }
}

// A bad duration in a URL said its code twice ("...: invalid argument: invalid argument";
// found by a hostile probe of the API).
TEST(BadUrl, ABadDurationSaysItsCodeOnce) {
  for (const char* url : {"redis://127.0.0.1:1?ttl=-1s", "zk://127.0.0.1:1?session_timeout=x",
                          "postgres://u@127.0.0.1:1/db?heartbeat=1y",
                          "mysql://u@127.0.0.1:1/db?mode=table&ttl=36501d"}) {
    SCOPED_TRACE(url);
    try {
      dlock::open(url);
      ADD_FAILURE() << "opened";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("duration"), std::string::npos) << what;
      EXPECT_EQ(what.find("invalid argument"), what.rfind("invalid argument")) << what;
    }
  }
}

TEST(BadUrl, ATableModeTtlTooShortIsRefusedBeforeConnecting) {
  for (const char* url : {"postgres://u@127.0.0.1:1/db?mode=table&ttl=0",
                          "mysql://u@127.0.0.1:1/db?mode=table&ttl=99ms"}) {
    SCOPED_TRACE(url);
    EXPECT_NE(bad_url_message(url).find("at least 100 ms"), std::string::npos);
  }
}

// An empty schema= was the default schema: another lock than the one meant (a hostile probe).
TEST(BadUrl, AnEmptySchemaIsRefused) {
  EXPECT_NE(bad_url_message("postgres://u@127.0.0.1:1/db?schema=").find("schema= needs a name"),
            std::string::npos);
}

// A NUL cut the name short where it reached a C interface: file:///tmp/x%00y opened /tmp/x
// (found by a review).
TEST(BadUrl, AnEncodedNulIsRefused) {
  for (const char* url : {"file:///tmp/dlock-x%00y", "zk://127.0.0.1:1/chroot%00x",
                          "postgres://u@127.0.0.1:1/db?schema=a%00b"}) {
    SCOPED_TRACE(url);
    EXPECT_NE(bad_url_message(url).find("%00"), std::string::npos);
  }
}

// A newline, a tab or a trailing blank in a URL (a DLOCK_BACKEND read from a file) named
// another directory of the file backend, so that two runs of one lock excluded nothing (found
// by a hostile probe); in the other URLs, another database or chroot.
TEST(BadUrl, AControlCharacterOrABlankAtAnEndIsRefused) {
  for (const char* url :
       {"file:///tmp/dlock-x\n", "file:///tmp/dlock-x%0A", "file:/tmp/dlock\tx",
        "file:///tmp/dlock-x ", "redis://127.0.0.1:1/0\n", "zk://127.0.0.1:1/chroot\t",
        "postgres://u@127.0.0.1:1/db\r", "mysql://u@127.0.0.1:1/db\n"}) {
    SCOPED_TRACE(url);
    const std::string message = bad_url_message(url);
    EXPECT_TRUE(message.find("control character") != std::string::npos ||
                message.find("blank") != std::string::npos)
        << message;
  }
}

// A URL is quoted safe to print, as lock names are: a NUL cut the message short, with its
// reason, and an escape sequence reached the terminal (found by a hostile probe).
TEST(BadUrl, TheUrlIsQuotedSafeToPrint) {
  for (const std::string& url :
       {std::string("redis://127.0.0.1:6379\0x", 24), std::string("redis://127.0.0.1:6379/\x1b[2J"),
        std::string("\x1b[2J://127.0.0.1")}) {
    SCOPED_TRACE(printable(url));
    const std::string message = bad_url_message(url);
    EXPECT_EQ(message.find_first_of(std::string("\0\x1b", 2)), std::string::npos) << message;
    EXPECT_TRUE(message.find("\\x00x") != std::string::npos ||
                message.find("\\x1b[2J") != std::string::npos)
        << message;
    EXPECT_TRUE(message.ends_with("invalid argument")) << message;
  }
}

// TLS files are read when the URL is: one that cannot be read, or a client key without its
// certificate, is a bad URL (78), not a server to retry (69). rediss:// read its CA file only
// when it connected, and zks:// ignored a key= without cert= (found by a hostile probe).
TEST(BadUrl, TlsFilesThatCannotServeAreRefusedBeforeConnecting) {
  for (const char* url :
       {"rediss://127.0.0.1:1?tls_ca=/nonexistent/ca.pem", "rediss://127.0.0.1:1?tls_ca=/",
        "zks://127.0.0.1:1?ca=/nonexistent/ca.pem", "zks://127.0.0.1:1?key=/nonexistent/key.pem",
        "mysql://u@127.0.0.1:1/db?ssl-ca=/nonexistent/ca.pem"}) {
    SCOPED_TRACE(url);
    EXPECT_NE(bad_url_message(url).find("TLS"), std::string::npos);
  }
}

// An unknown scheme's message quoted the URL with its password (found by a review).
TEST(Redacted, AnUnknownSchemeHidesThePassword) {
  const std::string message = bad_url_message("zookeeper://alice:s3cret@h:2181/x");
  EXPECT_NE(message.find("unknown scheme 'zookeeper'"), std::string::npos) << message;
  EXPECT_EQ(message.find("s3cret"), std::string::npos) << message;
}

// Schemes are case-insensitive (RFC 3986 §3.1): ZK:// was refused as an unknown scheme (found
// by a hostile test run). Each reaches its backend's own parser, named in lower case.
TEST(Scheme, CapitalsNameTheSameBackend) {
  for (const char* url :
       {"ZK://127.0.0.1:1?session_timeout=5s&session_timeout=6s",
        "Redis://127.0.0.1:1?ttl=2s&ttl=3s", "PostgreSQL://u@127.0.0.1:1/db?mode=table&mode=row",
        "MariaDB://u@127.0.0.1:1/db?ttl=5s&mode=table&ttl=6s"}) {
    SCOPED_TRACE(url);
    EXPECT_NE(bad_url_message(url).find("is given twice"), std::string::npos);
  }
  EXPECT_EQ(split_scheme("ZKS://h:1").scheme, "zks");
  EXPECT_EQ(split_scheme("Redlock://h:1").rest, "//h:1");
}

}  // namespace
}  // namespace dlock::detail
