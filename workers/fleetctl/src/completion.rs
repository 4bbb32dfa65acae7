//! `fleetctl completion bash|zsh|fish|…`: the shell's completion script, generated from the
//! command line's own definition, so it never lists a flag that does not exist.

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::Cli;

pub fn run(shell: Shell) {
    let mut command = Cli::command();
    clap_complete::generate(shell, &mut command, "fleetctl", &mut std::io::stdout());
}
