// A real Slurm cluster (slurm_fixture.hpp), its login node (the sshd fixture) and a project whose
// ferry.json names both: SLURM_CONF in its env, `slurm` as given. Header-only, for the Slurm tests.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "tests/integration/slurm_fixture.hpp"
#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/temp_dir.hpp"

namespace ferry::test {

struct SlurmProject {
  SlurmCluster slurm;
  SshdFixture login;
  TempDir project{"ferry-slurm-project"};
  SlurmProject(const std::string& name, const nlohmann::json& slurm_block) {
    login.trust_host_key();
    write_file(project / "ferry.json", nlohmann::json{{"name", name},
                                                      {"host", login.alias()},
                                                      {"sshConfig", login.ssh_config().string()},
                                                      {"interpreter", "/usr/bin/python3 -u"},
                                                      {"mappings", {{{"local", "."}, {"remote", "~/proj"}}}},
                                                      {"env", {{"SLURM_CONF", slurm.conf().string()}}},
                                                      {"slurm", slurm_block}}
                                           .dump(2));
  }
  // The names of job `id`'s steps that Slurm lists now.
  std::string steps(const std::string& id) const { return slurm.run("squeue -h --steps --jobs " + id + " -o %j").out; }
};

}  // namespace ferry::test
