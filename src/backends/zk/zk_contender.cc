#include "zk_contender.h"

#include <dlock/error.h>

#include "core/holder_data.h"
#include "core/lock_path.h"
#include "engine/rules.h"
#include "zk_holding.h"
#include "zk_queue_store.h"

namespace dlock::zk_backend {

ZkContender::ZkContender(std::shared_ptr<const SessionSite> session, std::string_view dir,
                         std::string label, std::uint32_t permits, const NodeNaming& naming)
    : session_(std::move(session)),
      dir_(dir),
      label_(label.empty() ? nullptr : std::make_unique<const std::string>(std::move(label))),
      permits_(permits),
      naming_(naming) {}

ZkContender::~ZkContender() { abandon(); }

void ZkContender::acquire(Clock::time_point deadline, std::stop_token stop, Done done) {
  const std::uint64_t ticket = current_.next_ticket();
  std::error_code ec;
  std::shared_ptr<zk::Client> client = session_->clients(ec);
  if (!client) return done(detail::Outcome::failure(ec));
  auto store = std::make_shared<ZkQueueStore>(
      std::move(client), ZkQueueStore::Site{.dir = std::string(dir_),
                                            .data = detail::encode_holder_data(label()),
                                            .naming = &naming_,
                                            .permits = permits_,
                                            .tail_guesses = naming_.role == engine::Role::exclusive
                                                                ? session_->tail_guesses
                                                                : nullptr});
  auto attempt = engine::Acquisition::start(
      {.store = std::move(store),
       .role = naming_.role,
       .permits = permits_,
       .connect_timeout = session_->connect_timeout,
       .connect_failure = std::shared_ptr<const std::string>(session_, &session_->connect_failure)},
      deadline, std::move(stop), std::move(done));
  current_.set(ticket, attempt);
}

// A writer's downgrade: a read node at the writer's own sequence, created plainly (not
// sequential), as Curator does. It sorts beside the writer's node, so writers queued behind
// the writer now wait for the reader too, and no writer can get in between.
//
// Unless the writer's node is gone already: an unlock() on another thread released it, or
// someone else deleted it, which let the next writer in, and a reader made beside it would
// sort before that holder. A getData of the writer's node, sent right behind the create and
// so answered after it, tells; then the reader goes again, and unless the write lock was
// released, it is lost.
void ZkContender::acquire_beside(const detail::Holding& held, Done done) {
  const auto* writer = dynamic_cast<const ZkHolding*>(&held);
  if (writer == nullptr || engine::rules_for(naming_.role).lower_entries_only_leave) {
    return done(detail::Outcome::failure(errc::not_supported, "downgrade"));
  }
  const std::string& node = held.node();
  auto path = std::make_shared<const std::string>(detail::child_path(
      dir_, naming_.new_prefix() + std::string(naming_.stem) + node.substr(node.size() - 10)));
  std::shared_ptr<zk::Client> client = writer->client();
  struct Created {
    std::error_code error;
    std::uint64_t token = 0;
  };
  auto created = std::make_shared<Created>();
  client->create(*path, detail::encode_holder_data(label()), zk::CreateMode::ephemeral,
                 [created](std::error_code ec, std::string, const zk::Stat& stat) {
                   created->error = ec;
                   created->token = static_cast<std::uint64_t>(stat.czxid);
                 });
  // The handle lends the write lock's holding read-only; its loss, which the handle raises
  // through the holding's own watch too, is the one change made to it here.
  std::weak_ptr<ZkHolding> write_lock =
      std::const_pointer_cast<ZkHolding>(writer->shared_from_this());
  client->get_data(node, [client, path, node, created, writer = std::move(write_lock),
                          lost = held.loss_signal(), done = std::move(done)](
                             std::error_code checked, std::string, const zk::Stat&) {
    if (const std::error_code ec = created->error) {
      // The create may have been applied though its reply was lost: take it back.
      if (zk::is_connection_error(ec)) client->remove_in_background(*path, /*may_be_gone=*/true);
      return done(detail::Outcome::failure(zk::to_dlock_error(ec), "downgrading: " + ec.message()));
    }
    if (checked) {
      client->remove_in_background(*path);
      if (checked != zk::Code::no_node) {
        return done(detail::Outcome::failure(zk::to_dlock_error(checked),
                                             "downgrading: " + checked.message()));
      }
      const std::shared_ptr<ZkHolding> held_write = writer.lock();
      if (!held_write || held_write->released()) {
        return done(
            detail::Outcome::failure(errc::not_locked, "unlocked while it was being downgraded"));
      }
      held_write->node_found_gone();
      return done(detail::Outcome::failure(
          errc::not_locked, "downgrading: the write lock's node " + node +
                                " was deleted by someone else; the write lock is lost"));
    }
    auto holding = std::make_shared<ZkHolding>(client, path, created->token, nullptr, lost);
    holding->watch();
    done(detail::Outcome::success(std::move(holding)));
  });
}

void ZkContender::abandon() noexcept {
  if (auto attempt = current_.get()) attempt->fail(errc::cancelled);
}

}  // namespace dlock::zk_backend
