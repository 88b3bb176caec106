fn main() {
    bellhop_plugin_api::build::emit();
}
