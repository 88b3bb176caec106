fn main() {
    bellhop_plugin_build::emit();
}
