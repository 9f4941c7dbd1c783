fn main() -> std::process::ExitCode {
    moverctl::cli::main()
}
