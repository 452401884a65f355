// Contender node names by role and convention (backends/zk/node_naming.h), and their
// translation into the engine's entries.
#include "backends/zk/node_naming.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include <dlock/error.h>

#include "engine/rules.h"

namespace {

using dlock::Naming;
using dlock::engine::Role;
using dlock::engine::rules_for;
using dlock::zk_backend::naming_for;
using dlock::zk_backend::naming_of_node;
using dlock::zk_backend::node_stem;
using dlock::zk_backend::permits_in_name;

TEST(NodeNaming, NameNodesLikeCurator) {
  EXPECT_EQ(naming_for(Role::exclusive, Naming::curator).stem, "lock-");
  EXPECT_EQ(naming_for(Role::exclusive, Naming::curator).markers,
            std::vector<std::string_view>{"lock-"});
  EXPECT_EQ(naming_for(Role::writer, Naming::curator).stem, "__WRIT__");
  EXPECT_EQ(naming_for(Role::reader, Naming::curator).stem, "__READ__");
  const std::vector<std::string_view> rw = {"__READ__", "__WRIT__"};
  EXPECT_EQ(naming_for(Role::writer, Naming::curator).markers, rw);
  EXPECT_EQ(naming_for(Role::reader, Naming::curator).markers, rw);
}

TEST(NodeNaming, ByRoleAndConvention) {
  EXPECT_EQ(naming_for(Role::exclusive, Naming::kazoo).stem, "__lock__");
  EXPECT_EQ(naming_for(Role::reader, Naming::kazoo).stem, "__rlock__");
  EXPECT_EQ(naming_for(Role::writer, Naming::kazoo).stem, "__lock__");
  EXPECT_EQ(naming_for(Role::semaphore, Naming::curator).stem, "lease-");
  EXPECT_THROW(naming_for(Role::semaphore, Naming::kazoo), dlock::Error);
  for (Role role : {Role::exclusive, Role::reader, Role::writer}) {
    EXPECT_EQ(naming_for(role, Naming::curator).role, role);
    EXPECT_EQ(naming_for(role, Naming::kazoo).role, role);
  }
}

TEST(NodeNaming, ByNodeName) {
  EXPECT_EQ(&naming_of_node("_c_x-lock-0000000001"), &naming_for(Role::exclusive, Naming::curator));
  EXPECT_EQ(&naming_of_node("_c_x-__WRIT__0000000001"), &naming_for(Role::writer, Naming::curator));
  EXPECT_EQ(&naming_of_node("_c_x-__READ__0000000001"), &naming_for(Role::reader, Naming::curator));
  EXPECT_EQ(&naming_of_node("_c_x-lease-0000000001"),
            &naming_for(Role::semaphore, Naming::curator));
  EXPECT_EQ(&naming_of_node("x__rlock__0000000001"), &naming_for(Role::reader, Naming::kazoo));
  EXPECT_EQ(&naming_of_node("x__lock__0000000001"), &naming_for(Role::writer, Naming::kazoo));
}

// Another kind of lock in the same convention is named (for lock_mismatch); another library's
// node is not (unorderable_path).
TEST(NodeNaming, OtherKind) {
  const auto& mutex = naming_for(Role::exclusive, Naming::curator);
  EXPECT_EQ(dlock::zk_backend::other_kind(mutex, "_c_x-lease-0000000001"), "semaphore");
  EXPECT_EQ(dlock::zk_backend::other_kind(mutex, "_c_x-__READ__0000000001"), "read-write lock");
  EXPECT_EQ(dlock::zk_backend::other_kind(mutex, "_c_x-lock-0000000001"), "");
  EXPECT_EQ(dlock::zk_backend::other_kind(mutex, "x__lock__0000000001"), "");
  EXPECT_EQ(dlock::zk_backend::other_kind(mutex, "_c_x-lease-00000x0001"), "");
}

TEST(NodeNaming, ChildrenBecomeEntriesOrStrangers) {
  const auto& reader = naming_for(Role::reader, Naming::curator);
  const auto listing = dlock::zk_backend::to_listing(
      {"_c_a-__WRIT__0000000003", "_c_b-__READ__0000000001", "_c_c-lease-0000000002", "zzz"},
      reader);
  ASSERT_EQ(listing.entries.size(), 2u);
  EXPECT_EQ(listing.entries[0].name, "_c_a-__WRIT__0000000003");
  EXPECT_EQ(listing.entries[0].role, Role::writer);
  EXPECT_EQ(listing.entries[0].order, "0000000003");
  EXPECT_EQ(listing.entries[1].role, Role::reader);
  EXPECT_EQ(listing.entries[1].sequence, "0000000001");
  ASSERT_EQ(listing.strangers.size(), 2u);
  EXPECT_EQ(listing.strangers[0].kind, "semaphore");
  EXPECT_EQ(listing.strangers[0].sequence, "0000000002");
  EXPECT_EQ(listing.strangers[1].kind, "");
}

// A semaphore's node names its permits, so every listing shows who disagrees; nothing else
// reads as permits, not even a protection prefix whose uuid ends in digits.
TEST(NodeNaming, ASemaphoreNodeNamesItsPermits) {
  EXPECT_EQ(node_stem(naming_for(Role::semaphore, Naming::curator), 3), "n3-lease-");
  EXPECT_EQ(node_stem(naming_for(Role::exclusive, Naming::curator), 3), "lock-");
  const std::string prefix = "_c_0b8fd4a4-0f1e-4c3b-9a7d-123456789012-";
  EXPECT_EQ(permits_in_name(prefix + "n3-lease-0000000007"), 3u);
  EXPECT_EQ(permits_in_name(prefix + "n4294967295-lease-0000000007"), 4294967295u);
  EXPECT_EQ(permits_in_name(prefix + "lease-0000000007"), 0u);  // an older dlock's node
  EXPECT_EQ(permits_in_name(prefix + "n-lease-0000000007"), 0u);
  EXPECT_EQ(permits_in_name(prefix + "n4294967296-lease-0000000007"), 0u);
  EXPECT_EQ(permits_in_name(prefix + "n3x-lease-0000000007"), 0u);
  EXPECT_EQ(permits_in_name(prefix + "lock-0000000007"), 0u);
  EXPECT_EQ(permits_in_name("n3-lease-0000000007"), 3u);
  EXPECT_EQ(permits_in_name("lease-0000000007"), 0u);
}

}  // namespace
