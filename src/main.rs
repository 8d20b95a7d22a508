//! stallscope: why doesn't my multithreaded native program scale?
//! `main` only parses the command line and hands over to the module for each subcommand.

use clap::Parser;
use stallscope::cli;

fn main() {
    let cli = cli::Cli::parse();
    let code = match cli::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("stallscope: error: {err:#}");
            2
        }
    };
    std::process::exit(code);
}
