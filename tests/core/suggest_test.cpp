// "Did you mean": the closest valid name to a misspelt one, and none when nothing is close.
#include "core/common/suggest.hpp"

#include <catch2/catch.hpp>

using namespace tp;

TEST_CASE("Edit distance counts insertions, deletions and substitutions, ignoring case", "[quick]")
{
  CHECK(edit_distance("vgg16", "vgg16") == 0);
  CHECK(edit_distance("vgg61", "vgg16") == 1); // two neighbours swapped
  CHECK(edit_distance("vgg1", "vgg16") == 1);
  CHECK(edit_distance("GRPC", "grpc") == 0);
  CHECK(edit_distance("", "abc") == 3);
}

TEST_CASE("A likely typo gets the closest valid name, an unrelated name gets none", "[quick]")
{
  const std::vector<std::string> transports{"grpc", "verbs_v1", "verbs_v2", "gdr", "mpi", "ar_grpc"};
  CHECK(closest_name("verbs_v3", transports) == "verbs_v1");
  CHECK(closest_name("gprc", transports) == "grpc");
  CHECK(closest_name("infiniband", transports).empty());
  const std::vector<std::string> nics{"connectx3-40gbe-roce", "connectx4-edr-ib", "connectx5-100gbe-roce"};
  CHECK(closest_name("connectx4", nics) == "connectx4-edr-ib"); // a prefix
  CHECK(closest_name("connectx4-edr-ib", nics).empty());        // valid: nothing to suggest
}

TEST_CASE("one_of_names lists the valid names and unknown_name adds the suggestion", "[quick]")
{
  const std::vector<std::string> models{"alexnet", "vgg16", "resnet50"};
  const std::string s = one_of_names("resnet5", models);
  CHECK(s.find("alexnet, vgg16, resnet50") != std::string::npos);
  CHECK(unknown_name("resnet5", models) == "\"resnet5\" (did you mean \"resnet50\"?)");
  CHECK(unknown_name("zzzzzz", models) == "\"zzzzzz\"");
  std::vector<std::string> many;
  for (int i = 0; i < 30; ++i)
    many.push_back("name" + std::to_string(i));
  CHECK(one_of_names("x", many, 5).find("(30 in all)") != std::string::npos);
}
