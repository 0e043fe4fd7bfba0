"""The bundled parser profiles: one compiled data file and one type module per profile.

`layerconf.load_profile` reads them; nothing here is imported until a profile is loaded.
"""
