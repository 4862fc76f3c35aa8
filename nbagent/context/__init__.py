"""Context producers: values turned into sourced UserMessages for inject()."""
